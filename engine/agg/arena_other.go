//go:build !linux

package agg

// Arena hands out large int64 slices. Off Linux (and in WebAssembly) it is
// plain Go memory: there is no huge-page advice to give.
type Arena struct{}

// NewArena returns an arena; huge is ignored off Linux.
func NewArena(huge bool) *Arena { return &Arena{} }

// Huge reports whether the arena maps memory advised for huge pages.
func (a *Arena) Huge() bool { return false }

// Int64s returns a zeroed slice of n int64s.
func (a *Arena) Int64s(n int) ([]int64, error) { return make([]int64, n), nil }

// Free releases nothing: the garbage collector owns the memory.
func (a *Arena) Free() {}
