//go:build linux

package bandwidth

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocWords returns a buffer of n words in an anonymous mapping of its
// own, outside the Go heap, and the function that unmaps it. Its pages are
// fresh: the kernel zeroes each as it is first written, in the chunked,
// interruptible loops that fill and copy into it. A buffer made on the Go
// heap may reuse memory an earlier cell freed, which the allocation itself
// clears first, all at once: hundreds of milliseconds an interrupt cannot
// cut short on a VM where page faults are dear. Unmapping hands the memory
// back as soon as the cell ends.
func allocWords(n int) ([]uint64, func(), error) {
	m, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("bandwidth: mapping %d bytes: %w", n*8, err)
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&m[0])), n), func() { unix.Munmap(m) }, nil
}
