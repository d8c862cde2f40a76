//go:build linux || darwin

package storage

import (
	"os"
	"syscall"
)

const canMap = true

func mmapFile(f *os.File, off int64, n int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), off, n, syscall.PROT_READ, syscall.MAP_SHARED)
}

func munmapFile(b []byte) { syscall.Munmap(b) }
