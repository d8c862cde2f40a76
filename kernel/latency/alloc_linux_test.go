//go:build linux

package latency

import (
	"strings"
	"testing"
)

func TestSmapsHugeBytes(t *testing.T) {
	smaps := `7f0000000000-7f0000200000 rw-p 00000000 00:00 0 
Size:               2048 kB
AnonHugePages:         0 kB
7f0000200000-7f0040200000 rw-p 00000000 00:00 0 
Size:            1048576 kB
AnonHugePages:    524288 kB
VmFlags: rd wr mr mw me ac hg
7f0040200000-7f0040400000 rw-p 00000000 00:00 0 
AnonHugePages:      2048 kB
`
	got, found, err := smapsHugeBytes(strings.NewReader(smaps), 0x7f0000200000, 0x7f0040200000)
	if err != nil || !found || got != 512<<20 {
		t.Errorf("huge = %d, found %v, err %v", got, found, err)
	}
	if _, found, _ := smapsHugeBytes(strings.NewReader(smaps), 0x1000, 0x2000); found {
		t.Error("found a mapping that is not there")
	}
}
