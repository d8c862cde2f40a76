//go:build linux

package agg

import (
	"sync/atomic"
	"testing"
)

// TestPoolMapped: every mapping an arena makes is reported to the pool's
// callback while it exists, kept or in use, and Drain unmaps what the pool
// keeps.
func TestPoolMapped(t *testing.T) {
	var mapped atomic.Int64
	pool := NewPool(64<<20, func(d int64) { mapped.Add(d) })
	a := NewArena(true, pool)
	if _, err := a.Bytes(3<<20, true); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Int64s(1<<20, true); err != nil {
		t.Fatal(err)
	}
	if got := mapped.Load(); got != 4<<20+8<<20 {
		t.Errorf("in use: %d bytes reported mapped, want %d", got, 4<<20+8<<20)
	}
	a.Free()
	if got := mapped.Load(); got != 12<<20 {
		t.Errorf("kept by the pool: %d bytes reported mapped, want %d", got, 12<<20)
	}
	b := NewArena(true, pool)
	if _, err := b.Bytes(3<<20, false); err != nil { // reuses the 4 MiB mapping
		t.Fatal(err)
	}
	if got := mapped.Load(); got != 12<<20 {
		t.Errorf("after reuse: %d bytes reported mapped, want %d", got, 12<<20)
	}
	b.Free()
	pool.Drain()
	if got := mapped.Load(); got != 0 {
		t.Errorf("after Drain: %d bytes still reported mapped", got)
	}
}
