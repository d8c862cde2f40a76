package spill

import (
	"os"
	"testing"
	"unsafe"

	"cachebook/engine/vec"
)

// TestDirectRoundTrip: chunks of every size, appended to two files in
// turn (so that the tail past each file's last block waits across other
// files' appends), come back as written, directly and through the page
// cache, and each file holds exactly its bytes.
func TestDirectRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 17, 1000, 70000, 3, 40000, 5}
	for _, direct := range []bool{true, false} {
		name := map[bool]string{true: "direct", false: "page cache"}[direct]
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			s, err := Open(root, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var files [2]*File
			var want [2][][]*vec.Vector
			for i := range files {
				if files[i], err = s.Create(); err != nil {
					t.Fatal(err)
				}
				d, ok := files[i].f.(*directFile)
				if !ok {
					t.Fatalf("a file of %T, want *directFile", files[i].f)
				}
				if !d.direct && direct {
					t.Skipf("%s takes no direct I/O", root)
				}
				if !direct {
					if err := setDirect(d.fd, false); err != nil {
						t.Fatal(err)
					}
					d.direct = false
				}
			}
			for k, rows := range sizes {
				for i, f := range files {
					cols := testColumns(rows, k+i+2)
					want[i] = append(want[i], cols)
					if err := f.Append(cols); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i, f := range files {
				r, err := f.Reader()
				if err != nil {
					t.Fatal(err)
				}
				d := f.f.(*directFile)
				if d.direct != direct {
					t.Errorf("file %d: direct %v after writing, want %v", i, d.direct, direct)
				}
				if fi, err := os.Stat(d.f.Name()); err != nil || fi.Size() != f.Size() {
					t.Errorf("file %d: %v, %d bytes on disk, want %d", i, err, fi.Size(), f.Size())
				}
				for k := 0; ; k++ {
					cols, ok, err := r.Next(nil)
					if err != nil {
						t.Fatalf("file %d chunk %d: %v", i, k, err)
					}
					if !ok {
						if k != len(sizes) {
							t.Errorf("file %d: %d chunks, want %d", i, k, len(sizes))
						}
						break
					}
					for c := range cols {
						if !equalVectors(cols[c], want[i][k][c]) {
							t.Fatalf("file %d chunk %d column %d differs", i, k, c)
						}
					}
				}
				if err := f.Remove(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestAlignedBytes: staging buffers start on a block boundary.
func TestAlignedBytes(t *testing.T) {
	for _, n := range []int{1, directAlign, directStage} {
		b := alignedBytes(n)
		if len(b) != n || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directAlign != 0 {
			t.Errorf("alignedBytes(%d): %d bytes at %p", n, len(b), unsafe.SliceData(b))
		}
	}
}
