package experiment

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"
)

// boolParam parses a true/false parameter, recording an error in p.
func boolParam(p *params, name string) bool {
	s := p.String(name)
	v, err := strconv.ParseBool(s)
	if err != nil {
		p.fail(fmt.Errorf("%s must be true or false, got %q", name, s))
		return false
	}
	return v
}

// viewWords views b as uint32 words (len(b)/4 of them). b must be 4-byte
// aligned, as every mmap'd or heap-allocated buffer of this size is.
func viewWords(b []byte) []uint32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// cost is what the memory experiments report: the workers' thread CPU
// time where the OS has it (so waiting for a core on a busy machine does
// not count as memory latency), else the wall time.
func (s runStats) cost() time.Duration {
	if c := s.CPUTotal(); c > 0 {
		return c
	}
	return s.Wall
}
