//go:build linux

package experiment

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// releaseSupported reports whether pages can be released here.
func releaseSupported() (bool, string) { return true, "" }

// reusable is an anonymous mapping on 4 KiB pages that can hand its pages
// back to the kernel in several ways between uses.
type reusable struct{ b []byte }

func mapSmallPages(size int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE) // 4 KiB pages even where THP is "always"
	return b, nil
}

func newReusable(size int) (*reusable, error) {
	b, err := mapSmallPages(size)
	if err != nil {
		return nil, err
	}
	return &reusable{b: b}, nil
}

func (r *reusable) bytes() []byte { return r.b }

// release hands the pages back as variant says (keep: not at all).
func (r *reusable) release(variant string) error {
	switch variant {
	case "free":
		if err := unix.Madvise(r.b, unix.MADV_FREE); err != nil {
			return fmt.Errorf("madvise(MADV_FREE): %w", err)
		}
	case "dontneed":
		if err := unix.Madvise(r.b, unix.MADV_DONTNEED); err != nil {
			return fmt.Errorf("madvise(MADV_DONTNEED): %w", err)
		}
	case "remap":
		size := len(r.b)
		if err := r.close(); err != nil {
			return err
		}
		b, err := mapSmallPages(size)
		if err != nil {
			return err
		}
		r.b = b
	}
	return nil
}

func (r *reusable) close() error {
	if r.b == nil {
		return nil
	}
	err := unix.Munmap(r.b)
	r.b = nil
	if err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}
