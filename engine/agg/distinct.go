package agg

import (
	"fmt"

	"cachebook/engine/vec"
)

// pairSet is the set of (group, value) pairs a DISTINCT aggregate over an
// integer-like input has seen: one 16-byte slot per pair, the value, the
// group and a mark, probed linearly. It does the work of a Table of two
// key columns (group id and value) without the table's key columns,
// per-column appends and comparisons: count(DISTINCT UserID) by RegionID
// spent most of its time in them. NULL values are not kept: no DISTINCT
// aggregate counts or adds them.
type pairSet struct {
	slots  []pairSlot
	mask   uint64
	n      int
	growAt int
	budget *Budget
}

type pairSlot struct {
	v    int64
	g    uint32
	used uint32
}

// pairHash mixes a pair's group into its value's hash.
func pairHash(g uint32, v int64) uint64 {
	return Mix64(uint64(v) ^ uint64(g)*0x9E3779B97F4A7C15)
}

// intLike reports whether values of t are kept in a vector's I64.
func intLike(t vec.Type) bool { return t.IsInteger() }

func newPairSet(budget *Budget) (*pairSet, error) {
	p := &pairSet{budget: budget}
	return p, p.alloc(16)
}

func (p *pairSet) alloc(size int) error {
	if err := p.budget.Grow(int64(size) * 16); err != nil {
		return fmt.Errorf("DISTINCT set of %d slots: %w", size, err)
	}
	p.slots, p.mask, p.growAt = make([]pairSlot, size), uint64(size-1), size*7/10
	firstWrite(p.slots)
	return nil
}

func (p *pairSet) grow() error {
	old := p.slots
	if err := p.alloc(2 * len(old)); err != nil {
		return err
	}
	p.budget.Grow(-int64(len(old)) * 16)
	// The old slots are read in order, the new ones at random: a chunk's
	// hashes are computed first and their slots prefetched a block ahead.
	var buf [growChunk]pairSlot
	var hs [growChunk]uint64
	slots, mask := p.slots, p.mask
	for lo := 0; lo < len(old); lo += growChunk {
		k := 0
		for _, s := range old[lo:min(lo+growChunk, len(old))] {
			if s.used != 0 {
				buf[k], hs[k] = s, pairHash(s.g, s.v)
				k++
			}
		}
		for i, s := range buf[:k] {
			if i%prefetchBlock == 0 {
				prefetchAhead(&slots[0], hs[:k], i, mask)
			}
			j := hs[i] & mask
			for slots[j].used != 0 {
				j = (j + 1) & mask
			}
			slots[j] = s
		}
	}
	return nil
}

// growChunk is the old slots grow rehashes at a time.
const growChunk = 256

// add adds the pair (g, v) and reports whether it is new.
func (p *pairSet) add(g uint32, v int64) (bool, error) {
	if p.n >= p.growAt {
		if err := p.grow(); err != nil {
			return false, err
		}
	}
	j := pairHash(g, v) & p.mask
	for {
		s := &p.slots[j]
		if s.used == 0 {
			*s = pairSlot{v: v, g: g, used: 1}
			p.n++
			return true, nil
		}
		if s.v == v && s.g == g {
			return false, nil
		}
		j = (j + 1) & p.mask
	}
}

// release gives the slots back.
func (p *pairSet) release() {
	p.budget.Grow(-int64(len(p.slots)) * 16)
	p.slots = nil
}

// distinctName names a DISTINCT aggregate in errors.
func (s *State) distinctName() string {
	if s.spec.Kind == CountDistinct {
		return "count"
	}
	return s.spec.Kind.String()
}

// addPairs adds the (group, value) pairs of n rows to the pair set and
// calls first for each row whose pair is new (never a NULL value). The
// pairs' hashes are computed in one loop and probed in another, which
// prefetches the slots of the rows two blocks ahead, so that the probes'
// cache misses overlap.
func (s *State) addPairs(gids []uint32, in *vec.Vector, n int, first func(i int, g uint32)) error {
	p := s.pset
	if cap(s.ph) < n {
		s.ph = make([]uint64, n)
	}
	hs := s.ph[:n]
	vs, valid := in.I64[:n], in.Valid
	gids = gids[:n]
	for i, g := range gids {
		hs[i] = pairHash(g, vs[i])
	}
	slots, mask := p.slots, p.mask
	for i, g := range gids {
		if i%prefetchBlock == 0 {
			prefetchAhead(&slots[0], hs, i, mask)
		}
		if valid != nil && !valid[i] {
			continue
		}
		v := vs[i]
		j := hs[i] & mask
		for {
			sl := &slots[j]
			if sl.used == 0 {
				if p.n >= p.growAt {
					if err := p.grow(); err != nil {
						return fmt.Errorf("%s(DISTINCT): %w", s.distinctName(), err)
					}
					slots, mask = p.slots, p.mask
					j = hs[i] & mask
					continue
				}
				*sl = pairSlot{v: v, g: g, used: 1}
				p.n++
				first(i, g)
				break
			}
			if sl.v == v && sl.g == g {
				break
			}
			j = (j + 1) & mask
		}
	}
	return nil
}

// mergePairs folds the pairs of src's pair set into s, src's groups mapped
// to s's by remap, as input rows of those groups.
func (s *State) mergePairs(src *State, remap []uint32) error {
	gids := make([]uint32, 0, mergeChunk)
	vals := &vec.Vector{Type: s.spec.In, I64: make([]int64, 0, mergeChunk)}
	flush := func() error {
		vals.Len = len(vals.I64)
		err := s.Update(gids, vals, len(gids))
		gids, vals.I64 = gids[:0], vals.I64[:0]
		return err
	}
	for _, ps := range src.pset.slots {
		if ps.used == 0 {
			continue
		}
		gids = append(gids, remap[ps.g])
		vals.I64 = append(vals.I64, ps.v)
		if len(gids) == mergeChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
