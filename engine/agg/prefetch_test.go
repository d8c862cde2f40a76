package agg

import (
	"testing"
	"unsafe"
)

// TestPrefetchNeverFaults checks that prefetches of addresses that point
// nowhere, as a stale slot's may, are only hints: nil, a small integer,
// the top of the address space, and the end of a slice.
func TestPrefetchNeverFaults(t *testing.T) {
	buf := make([]byte, 64)
	addrs := []uintptr{0, 1, 4096, ^uintptr(0), ^uintptr(0) - 63,
		uintptr(unsafe.Pointer(unsafe.SliceData(buf))) + 1<<40}
	prefetchAddrs(addrs)
	prefetchAddrs(nil)
	slots := make([]pairSlot, 16)
	prefetchPairs(&slots[0], []uint64{0, 15, ^uint64(0)}, 15)
}

// TestSlotsPrefetchAlike: a direct window prefetches its slots with
// prefetchPairs, which strides over pairSlots.
func TestSlotsPrefetchAlike(t *testing.T) {
	if a, b := unsafe.Sizeof(slot{}), unsafe.Sizeof(pairSlot{}); a != b {
		t.Fatalf("a slot is %d bytes, a pairSlot %d", a, b)
	}
}
