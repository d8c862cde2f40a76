//go:build !linux

package spill

import "os"

// stagePool is where direct I/O keeps its buffers (direct_linux.go); this
// platform's spill files go through the page cache.
type stagePool struct{}

// wrapFile returns the spill file f as a backend's storage.
func wrapFile(f *os.File, _ *stagePool) storage { return osFile{f} }
