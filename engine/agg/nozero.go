package agg

import (
	"strings"
	"unsafe"
)

// growNoZero returns s with room for n more elements, like slices.Grow
// (though with no room to spare), except that the room is not zeroed:
// the elements past len(s) hold whatever the memory held, and are only
// ever written before they are read (appended). A table's key arrays are
// handed out with each partition's groups and allocated afresh for the
// next one, and zeroing arrays that appends then overwrite took a few
// percent of a cold GROUP BY URL. strings.Builder grows its buffer
// without zeroing it; its buffer, a fresh allocation of its own, becomes
// the slice's.
func growNoZero[T uint8 | uint32 | int64 | uint64 | float64](s []T, n int) []T {
	if n <= cap(s)-len(s) {
		return s
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	c := len(s) + n
	var b strings.Builder
	b.Grow(c * size)
	b.WriteByte(0) // String points at the buffer only once it holds a byte
	p := unsafe.Pointer(unsafe.StringData(b.String()))
	out := unsafe.Slice((*T)(p), c)[:len(s)]
	copy(out, s)
	return out
}
