package agg

// prefetchBlock is the rows whose first slots a probing loop prefetches at
// a time (prefetchAhead).
const prefetchBlock = 16

// prefetchAhead serves a loop that probes, in order, the slot of slots (a
// table of mask+1 slots) that each hash of hs starts at. Called at each
// row i that starts a block, it prefetches the slots of the block two
// blocks on, and at row 0 those of the first two blocks too, so that each
// probe's miss is under way two blocks before the probe. A slot table may
// move as it grows, so slots is taken afresh at each call.
func prefetchAhead(slots *pairSlot, hs []uint64, i int, mask uint64) {
	if i == 0 {
		prefetchPairs(slots, hs[:min(len(hs), 2*prefetchBlock)], mask)
	}
	if from := i + 2*prefetchBlock; from < len(hs) {
		prefetchPairs(slots, hs[from:min(len(hs), from+prefetchBlock)], mask)
	}
}
