//go:build linux

package freshmem

import (
	"fmt"
	"syscall"
)

// Supported reports whether Map can map memory here, and why not.
func Supported() (bool, string) { return true, "" }

// Map maps size bytes of fresh anonymous memory. The kernel hands out a
// zeroed page on the first touch of each page, so only touched pages are
// ever zeroed. release unmaps it.
func Map(size int) (buf []byte, release func() error, err error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	return b, func() error {
		if err := syscall.Munmap(b); err != nil {
			return fmt.Errorf("munmap: %w", err)
		}
		return nil
	}, nil
}
