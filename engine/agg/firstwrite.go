package agg

import "unsafe"

// firstWriteMin is the size from which a new hash table's memory is
// written before it is probed (firstWrite): below it the memory mostly
// comes from pages the Go heap already holds.
const firstWriteMin = 256 << 10

// firstWrite stores the zero value into one element of s per 4 KiB page,
// so that the first touch of each page of freshly mapped memory is a
// write. A hash table is probed before it is written: a page first read
// maps the kernel's shared zero page, and the write that follows must
// copy it and flush the old mapping from the TLB of every CPU the
// process has run on, an inter-processor interrupt, which a virtual
// machine turns into exits to the host. A page first written is simply
// allocated. The stores cost one per page; on memory the Go heap had
// already zeroed they only touch it. s must be zeroed already.
func firstWrite[T any](s []T) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if size == 0 || len(s)*size < firstWriteMin {
		return
	}
	step := max(1, 4096/size)
	for i := 0; i < len(s); i += step {
		s[i] = zero
	}
}
