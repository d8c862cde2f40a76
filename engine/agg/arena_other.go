//go:build !linux

package agg

// Pool keeps large allocations for reuse. Off Linux (and in WebAssembly)
// the garbage collector owns the memory, so it keeps nothing.
type Pool struct{}

// DefaultPoolBytes is the pool limit used when none is configured; off
// Linux the pool keeps nothing.
func DefaultPoolBytes() int64 { return 0 }

// NewPool returns a pool; limit and onMapped are ignored off Linux, where
// nothing is mapped outside Go's heap.
func NewPool(limit int64, onMapped func(delta int64)) *Pool { return &Pool{} }

// Drain releases nothing: off Linux the pool keeps nothing.
func (p *Pool) Drain() {}

// kept is always 0: off Linux the pool keeps nothing.
func (p *Pool) kept() int64 { return 0 }

// HugePageNote is always "": off Linux there are no huge pages to measure.
func (p *Pool) HugePageNote() string { return "" }

// Arena hands out large int64 slices. Off Linux it is plain Go memory:
// there is no huge-page advice to give.
type Arena struct{}

// NewArena returns an arena; huge and pool are ignored off Linux.
func NewArena(huge bool, pool *Pool) *Arena { return &Arena{} }

// Huge reports whether the arena maps memory advised for huge pages.
func (a *Arena) Huge() bool { return false }

// Int64s returns a zeroed slice of n int64s.
func (a *Arena) Int64s(n int, zero bool) ([]int64, error) { return make([]int64, n), nil }

// Bytes returns a zeroed slice of n bytes from Go's heap.
func (a *Arena) Bytes(n int, zero bool) ([]byte, error) { return make([]byte, n), nil }

// Free releases nothing: the garbage collector owns the memory.
func (a *Arena) Free() {}
