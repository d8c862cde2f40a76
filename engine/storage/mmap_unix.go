//go:build linux || darwin

package storage

import (
	"os"
	"syscall"
)

const canMap = true

// mmapFile maps n bytes of f from off, read-only and shared.
func mmapFile(f *os.File, off int64, n int) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var b []byte
	var merr error
	// Control keeps the descriptor open while it is mapped.
	if err := rc.Control(func(fd uintptr) {
		b, merr = syscall.Mmap(int(fd), off, n, syscall.PROT_READ, syscall.MAP_SHARED)
	}); err != nil {
		return nil, err
	}
	return b, merr
}

// munmapFile unmaps b, a mapping of mmapFile.
func munmapFile(b []byte) { syscall.Munmap(b) }
