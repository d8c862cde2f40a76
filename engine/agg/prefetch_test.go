package agg

import (
	"testing"
	"unsafe"
)

// TestPrefetchNeverFaults checks that prefetchPairs stays within its
// table for any hash, the smallest and the largest included.
func TestPrefetchNeverFaults(t *testing.T) {
	slots := make([]pairSlot, 16)
	prefetchPairs(&slots[0], []uint64{0, 15, ^uint64(0)}, 15)
	prefetchPairs(&slots[0], nil, 15)
}

// TestSlotsPrefetchAlike: a direct window prefetches its slots with
// prefetchPairs, which strides over pairSlots.
func TestSlotsPrefetchAlike(t *testing.T) {
	if a, b := unsafe.Sizeof(slot{}), unsafe.Sizeof(pairSlot{}); a != b {
		t.Fatalf("a slot is %d bytes, a pairSlot %d", a, b)
	}
}
