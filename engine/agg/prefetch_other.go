//go:build !amd64

package agg

import "unsafe"

// prefetchPairs does nothing where the engine has no prefetch instruction
// to issue (prefetch_amd64.go says what it does on amd64).
func prefetchPairs(*pairSlot, []uint64, uint64) {}

// prefetchLines does nothing here (see prefetch_amd64.go).
func prefetchLines(unsafe.Pointer, int) {}
