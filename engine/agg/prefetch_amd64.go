package agg

import "unsafe"

// prefetchPairs asks the CPU to bring into its cache the slot of slots
// (a table of mask+1 slots) that each hash of hs probes first (PREFETCHT0,
// SSE, so every amd64 CPU has it). A probe of a pair set much larger than
// the cache waits on memory, and its branches depend on the slot it loads:
// a mispredicted one throws away the loads issued past it, so the probes
// of consecutive rows hardly overlap. Prefetches issued a block of rows
// ahead do overlap, and a prefetch never faults.
//
//go:noescape
func prefetchPairs(slots *pairSlot, hs []uint64, mask uint64)

// prefetchLines asks the CPU to bring into its cache the lines 64-byte
// lines from p on. Lines past the end of p's memory may be asked for too:
// a prefetch never faults.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, lines int)
