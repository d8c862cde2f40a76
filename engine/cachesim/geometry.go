package cachesim

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"cachebook/engine/units"
)

// Level is one cache level. A level with Size 0 is absent: accesses pass
// straight through to the next level.
type Level struct {
	Size int64 // bytes
	Ways int
}

// Sets returns the number of sets of a level with lines of line bytes.
func (l Level) Sets(line int) int {
	if l.Size == 0 || l.Ways == 0 {
		return 0
	}
	return int(l.Size / int64(line) / int64(l.Ways))
}

// TLBLevel is one level of the data TLB.
type TLBLevel struct {
	Entries int
	Ways    int
}

// Prefetch selects the modelled hardware prefetcher.
type Prefetch uint8

// The prefetchers. Both fill L2 and L3 (not L1) from memory, as an L2
// hardware prefetcher does, and only prefetch within the 4 KiB page of the
// triggering access.
const (
	PrefetchOff Prefetch = iota
	// PrefetchNextLine fetches line X+1 on every L1 demand miss of line X.
	PrefetchNextLine
	// PrefetchStride tracks the L1 demand misses of up to 16 pages; after
	// two misses with the same line stride in a page it fetches the next
	// PrefetchDegree lines along that stride.
	PrefetchStride
)

// PrefetchDegree is how many lines ahead the stride prefetcher fetches.
const PrefetchDegree = 4

var prefetchNames = []string{"off", "next-line", "stride"}

func (p Prefetch) String() string {
	if int(p) < len(prefetchNames) {
		return prefetchNames[p]
	}
	return fmt.Sprintf("Prefetch(%d)", p)
}

// Geometry describes the modelled memory hierarchy of one core.
//
// The model: LineSize-byte lines; every cache set-associative with true LRU
// replacement; write-back and write-allocate (a store that misses reads the
// line for ownership, and a dirty line written back on eviction counts as a
// write to the next level, and from the last level to DRAM); non-inclusive
// with fill at every level on a miss and no back-invalidation (an L3
// eviction leaves copies in L1 and L2), the policy cachegrind also models.
// The data TLB has two levels of set-associative LRU entries for pages of
// 4 KiB and 2 MiB (one entry covers one page of either size); a miss in
// both is a page walk, whose own memory accesses are not modelled.
type Geometry struct {
	LineSize   int
	L1, L2, L3 Level
	TLB1, TLB2 TLBLevel
	Prefetch   Prefetch
}

// DefaultGeometry is the stated fallback when the machine's caches are not
// known: a current x86 server core (32 KiB 8-way L1d, 1 MiB 16-way L2,
// 32 MiB 16-way L3 slice; 64-entry 4-way L1 dTLB, 2048-entry 16-way L2
// TLB), prefetch off.
func DefaultGeometry() Geometry {
	return Geometry{
		LineSize: 64,
		L1:       Level{Size: 32 << 10, Ways: 8},
		L2:       Level{Size: 1 << 20, Ways: 16},
		L3:       Level{Size: 32 << 20, Ways: 16},
		TLB1:     TLBLevel{Entries: 64, Ways: 4},
		TLB2:     TLBLevel{Entries: 2048, Ways: 16},
	}
}

// EPYC9124 is the article's machine as modelled here: AMD EPYC 9124 (Zen 4
// "Genoa", 16 cores). Per core 32 KiB 8-way L1d and 1 MiB 8-way L2; the
// 64 MiB of L3 is split over the chip's CCDs and a core allocates only in
// its own CCD's 16-way L3. We assume 4 CCDs of 4 cores, so 16 MiB of L3
// per core's CCD (the part's core count and total L3 are AMD's figures;
// the CCD count is our assumption, see the cachesim README). Zen 4's L3 is
// a victim cache of L2; the model fills it on every miss instead. dTLB:
// 72-entry fully associative L1 (modelled as 72-way) and 3072-entry
// 12-way L2.
func EPYC9124() Geometry {
	return Geometry{
		LineSize: 64,
		L1:       Level{Size: 32 << 10, Ways: 8},
		L2:       Level{Size: 1 << 20, Ways: 8},
		L3:       Level{Size: 16 << 20, Ways: 16},
		TLB1:     TLBLevel{Entries: 72, Ways: 72},
		TLB2:     TLBLevel{Entries: 3072, Ways: 12},
	}
}

// Validate checks that every set count is a power of two.
func (g Geometry) Validate() error {
	if g.LineSize < 8 || g.LineSize&(g.LineSize-1) != 0 {
		return fmt.Errorf("cachesim: line size must be a power of two of at least 8 bytes, got %d", g.LineSize)
	}
	for _, l := range []struct {
		name string
		l    Level
	}{{"l1", g.L1}, {"l2", g.L2}, {"l3", g.L3}} {
		if l.l.Size == 0 {
			continue
		}
		if l.l.Size < 0 || l.l.Ways <= 0 {
			return fmt.Errorf("cachesim: %s: size and ways must be positive", l.name)
		}
		if l.l.Size%(int64(g.LineSize)*int64(l.l.Ways)) != 0 {
			return fmt.Errorf("cachesim: %s: %s is not a whole number of %d-way sets of %d B lines", l.name, units.FormatBytes(l.l.Size), l.l.Ways, g.LineSize)
		}
		if s := l.l.Sets(g.LineSize); s&(s-1) != 0 {
			return fmt.Errorf("cachesim: %s: %d sets (%s, %d-way) is not a power of two", l.name, s, units.FormatBytes(l.l.Size), l.l.Ways)
		}
		if l.l.Size > 4<<30 {
			return fmt.Errorf("cachesim: %s: at most 4 GiB, got %s", l.name, units.FormatBytes(l.l.Size))
		}
	}
	if g.L1.Size == 0 {
		return fmt.Errorf("cachesim: l1 must be present")
	}
	for _, t := range []struct {
		name string
		t    TLBLevel
	}{{"tlb1", g.TLB1}, {"tlb2", g.TLB2}} {
		if t.t.Entries == 0 {
			continue
		}
		if t.t.Ways <= 0 || t.t.Entries%t.t.Ways != 0 || t.t.Entries > 1<<20 {
			return fmt.Errorf("cachesim: %s: %d entries is not a whole number of %d-way sets", t.name, t.t.Entries, t.t.Ways)
		}
	}
	return nil
}

// String describes the geometry in one line, for output labelled with it.
func (g Geometry) String() string {
	var b strings.Builder
	lv := func(name string, l Level) {
		if l.Size == 0 {
			fmt.Fprintf(&b, "%s none, ", name)
			return
		}
		fmt.Fprintf(&b, "%s %s %d-way, ", name, units.FormatBytes(l.Size), l.Ways)
	}
	lv("L1d", g.L1)
	lv("L2", g.L2)
	lv("L3", g.L3)
	fmt.Fprintf(&b, "%d B lines, LRU, write-back write-allocate, non-inclusive; dTLB %d+%d entries (4 KiB/2 MiB pages); prefetch %s",
		g.LineSize, g.TLB1.Entries, g.TLB2.Entries, g.Prefetch)
	return b.String()
}

// Parse applies space-separated overrides to g and returns the result:
// l1=32K l2=1M l3=32M (sizes, 0 or none for an absent level), l1ways=8
// l2ways=16 l3ways=16, line=64, tlb1=64 tlb2=2048 (entries), tlb1ways=4
// tlb2ways=16, prefetch=off|next-line|stride. Sizes use engine/units.
func Parse(g Geometry, spec string) (Geometry, error) {
	for _, f := range strings.Fields(spec) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return g, fmt.Errorf("cachesim: %q: want key=value", f)
		}
		k = strings.ToLower(k)
		switch k {
		case "l1", "l2", "l3":
			var n int64
			if v != "none" {
				var err error
				if n, err = units.ParseBytes(v); err != nil {
					return g, fmt.Errorf("cachesim: %s: %w", k, err)
				}
			}
			switch k {
			case "l1":
				g.L1.Size = n
			case "l2":
				g.L2.Size = n
			default:
				g.L3.Size = n
			}
		case "l1ways", "l2ways", "l3ways", "line", "tlb1", "tlb2", "tlb1ways", "tlb2ways":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 1<<20 {
				return g, fmt.Errorf("cachesim: %s: want a count, got %q", k, v)
			}
			switch k {
			case "l1ways":
				g.L1.Ways = n
			case "l2ways":
				g.L2.Ways = n
			case "l3ways":
				g.L3.Ways = n
			case "line":
				g.LineSize = n
			case "tlb1":
				g.TLB1.Entries = n
			case "tlb2":
				g.TLB2.Entries = n
			case "tlb1ways":
				g.TLB1.Ways = n
			case "tlb2ways":
				g.TLB2.Ways = n
			}
		case "prefetch":
			found := false
			for i, name := range prefetchNames {
				if v == name || (v == "on" && i == int(PrefetchStride)) {
					g.Prefetch, found = Prefetch(i), true
				}
			}
			if !found {
				return g, fmt.Errorf("cachesim: prefetch: want off, next-line or stride, got %q", v)
			}
		default:
			return g, fmt.Errorf("cachesim: unknown geometry key %q", k)
		}
	}
	return g, g.Validate()
}

func log2(n int) uint { return uint(bits.TrailingZeros(uint(n))) }
