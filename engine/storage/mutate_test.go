package storage

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestRandomMutations feeds thousands of randomly damaged files through
// Open and Load: each must end quickly with a result or an error.
func TestRandomMutations(t *testing.T) {
	seed := writeAllTypes(t, 50)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1500; i++ {
		d := bytes.Clone(seed)
		for k := 0; k < 1+r.IntN(4); k++ {
			switch r.IntN(3) {
			case 0:
				d[r.IntN(len(d))] = byte(r.Uint32())
			case 1:
				d[r.IntN(len(d))] ^= 1 << r.IntN(8)
			case 2:
				p := r.IntN(len(d) - 4)
				copy(d[p:], []byte{0xff, 0xff, 0xff, 0x7f})
			}
		}
		done := make(chan struct{})
		go func() { loadAll(d); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			os.WriteFile(filepath.Join(t.TempDir(), "hang.parquet"), d, 0o644)
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("hang at %d:\n%s", i, buf[:n])
		}
	}
}
