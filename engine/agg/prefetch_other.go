//go:build !amd64

package agg

// prefetchPairs does nothing where the engine has no prefetch instruction
// to issue (prefetch_amd64.go says what it does on amd64).
func prefetchPairs(*pairSlot, []uint64, uint64) {}
