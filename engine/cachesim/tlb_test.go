package cachesim

import (
	"math/rand/v2"
	"testing"
)

// TestLRUMatchesArray pins the list-and-index LRU of a fully associative
// TLB to the array in recency order it replaces, access for access, over
// streams that hit, miss and evict (working sets below, at and above the
// entries).
func TestLRUMatchesArray(t *testing.T) {
	for _, ways := range []int{17, 72, 100} {
		for _, span := range []uint64{8, uint64(ways), uint64(ways) + 1, 3 * uint64(ways), 100000} {
			arr := tlb{ways: ways, setMask: 0, tags: make([]uint64, ways)}
			l := newLRU(ways)
			r := rand.New(rand.NewPCG(uint64(ways), span))
			hits := 0
			for i := range 200000 {
				var page uint64
				if r.IntN(4) == 0 {
					page = r.Uint64N(span) << 1
				} else {
					page = (r.Uint64N(span)/4*4 + uint64(i%4)) << 1
				}
				a, b := arr.access(page), l.access(page)
				if a != b {
					t.Fatalf("%d ways, span %d, access %d (page %d): array hit %v, lru hit %v", ways, span, i, page, a, b)
				}
				if a {
					hits++
				}
			}
			if span <= uint64(ways) && hits == 0 {
				t.Errorf("%d ways, span %d: no hits", ways, span)
			}
		}
	}
}
