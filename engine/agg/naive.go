package agg

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"cachebook/engine/vec"
)

// PartGroups is the most groups a naive aggregation hands out in one part:
// a consumer such as a top-N then holds a part's worth of groups at a time
// rather than a copy of all of them.
const PartGroups = 1 << 16

// mergeChunk is the rows a merge of one worker's table into another's
// groups at a time.
const mergeChunk = 1 << 16

// naive folds every row into one hash table and hands its groups out a
// part of at most PartGroups groups at a time.
//
// With cfg.Threads above one, its input is read on that many workers:
// each folds its morsels into a table of its own, and Finalize merges the
// tables into the first (every aggregate's states merge, DISTINCT ones by
// their sets of values), or with cfg.Shared, every worker folds into the
// one table under a lock, so that a table too large to hold twice is
// built once while the workers read and evaluate the input in parallel.
type naive struct {
	cfg    Config
	specs  []Spec
	sets   []*groupSet // per worker; one when shared
	shared bool
	mu     sync.Mutex // the shared table; Next

	// After Finalize: the groups, the next to hand out, the largest
	// table's slots and what the merge did.
	groups    int
	next      int
	finalized bool
	slots     int
	closed    bool
}

// NaiveWorkers returns the workers a naive aggregation of specs runs on
// with threads threads and tables of their own: one where a state
// cannot be merged (an aggregate over a NULL literal).
func NaiveWorkers(specs []Spec, threads int) int {
	if !mergeable(specs) {
		return 1
	}
	return max(threads, 1)
}

// mergeable reports whether one worker's states of specs can be merged
// into another's: partial states (decomposable), or a DISTINCT set.
func mergeable(specs []Spec) bool {
	for _, sp := range specs {
		distinct := sp.Kind == CountDistinct || sp.Distinct && (sp.Kind == Sum || sp.Kind == Avg)
		if !distinct && !decomposable([]Spec{sp}) {
			return false
		}
	}
	return true
}

func newNaive(keyTypes []vec.Type, specs []Spec, cfg Config) (*naive, error) {
	a := &naive{cfg: cfg, specs: specs, shared: cfg.Shared}
	n := NaiveWorkers(specs, cfg.Threads)
	if cfg.Shared {
		n = 1
	}
	for range n {
		gs, err := newGroupSet(keyTypes, specs, 0, cfg)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.sets = append(a.sets, gs)
	}
	return a, nil
}

func (a *naive) Workers() int {
	if a.shared {
		return max(a.cfg.Threads, 1)
	}
	return len(a.sets)
}

func (a *naive) Sink(w int, in Input) error {
	gs := a.sets[0]
	if a.shared {
		a.mu.Lock()
		defer a.mu.Unlock()
	} else {
		gs = a.sets[w]
	}
	if err := gs.addHashing(a.cfg.Hasher, in); err != nil {
		return naiveError(gs.table.Len(), err)
	}
	return nil
}

// naiveError explains a naive table's memory error: its one table cannot
// spill, and what can.
func naiveError(groups int, err error) error {
	if !errors.Is(err, ErrMemoryLimit) {
		return err
	}
	return fmt.Errorf("naive GROUP BY's one hash table does not fit at %d groups; %s: %w", groups, NaiveWayOut(), err)
}

// NaiveWayOut says why a naive GROUP BY over the memory limit fails and
// what runs instead: radix spills to temporary files, or to memory where
// a runtime has none.
func NaiveWayOut() string {
	return "naive has no partitions to spill; radix and parallel spill theirs (SET group_by = 'radix'), or raise memory_limit"
}

func (a *naive) Flush(int) error { return nil }

// Finalize merges the other workers' tables into the first, and gives
// back the first's slots: the groups are found by their ids from now.
func (a *naive) Finalize(ctx context.Context) error {
	if a.closed || len(a.sets) == 0 {
		return fmt.Errorf("aggregate: finalized after close")
	}
	for _, gs := range a.sets {
		a.slots = max(a.slots, gs.table.Slots())
	}
	dst := a.sets[0]
	for w := 1; w < len(a.sets); w++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := dst.mergeSet(a.cfg.Hasher, a.sets[w], a.cfg.Budget); err != nil {
			return naiveError(dst.table.Len(), err)
		}
		a.sets[w].release()
		a.sets[w] = nil
	}
	a.sets = a.sets[:1]
	dst.table.releaseSlots()
	a.groups = dst.table.Len()
	a.finalized = true
	return nil
}

// Next hands out the next PartGroups groups: views of the table's keys,
// charged as the table's until the aggregator is closed, and the
// aggregates of those groups, charged as the part's.
func (a *naive) Next(context.Context, int) (Part, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.finalized || a.closed || a.next >= a.groups {
		return Part{}, false, nil
	}
	lo := a.next
	hi := min(lo+PartGroups, a.groups)
	gs := a.sets[0]
	p := Part{Groups: hi - lo}
	for _, k := range gs.table.Keys() {
		p.Keys = append(p.Keys, tightSlice(k, lo, hi))
	}
	for _, st := range gs.states {
		v, err := st.finalizeRange(lo, hi)
		if err != nil {
			return Part{}, false, err
		}
		p.Aggs = append(p.Aggs, v)
	}
	p.Bytes = VectorBytes(p.Aggs...)
	if err := a.cfg.Budget.Grow(p.Bytes); err != nil {
		return Part{}, false, err
	}
	a.next = hi
	return p, true, nil
}

// tightSlice returns rows [lo, hi) of v without copying the values, its
// slices' capacities cut to those rows (so that whoever counts a part's
// memory by them counts the part's), and a string column's offsets made
// relative to its bytes.
func tightSlice(v *vec.Vector, lo, hi int) *vec.Vector {
	s := &vec.Vector{Type: v.Type, Len: hi - lo}
	switch v.Type {
	case vec.Null:
	case vec.String:
		first, last := v.Offsets[lo], v.Offsets[hi]
		s.Bytes = v.Bytes[first:last:last]
		s.Offsets = make([]uint32, hi-lo+1)
		for i, o := range v.Offsets[lo : hi+1] {
			s.Offsets[i] = o - first
		}
	case vec.Float64, vec.Float32:
		s.F64 = v.F64[lo:hi:hi]
	default:
		s.I64 = v.I64[lo:hi:hi]
	}
	if v.Valid != nil {
		s.Valid = v.Valid[lo:hi:hi]
	}
	return s
}

func (a *naive) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := Stats{SinkPhase: "aggregate", Complete: a.finalized}
	if a.finalized {
		st.Groups, st.TableSlots = a.groups, a.slots
		return st
	}
	for _, gs := range a.sets {
		if gs != nil {
			st.Groups += gs.table.Len()
			st.TableSlots = max(st.TableSlots, gs.table.Slots())
		}
	}
	return st
}

// Close gives back the tables and their states. The parts handed out
// charged only their aggregates: their keys are views of the table's,
// charged until now.
func (a *naive) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	for _, gs := range a.sets {
		if gs != nil {
			gs.release()
		}
	}
	a.sets = nil
}

// release gives back the set's table and states.
func (gs *groupSet) release() {
	gs.table.release()
	for _, st := range gs.states {
		st.release()
	}
}

// releaseSlots gives back the table's slots, keeping its keys: once a
// table is complete its groups are found by their ids.
func (t *Table) releaseSlots() {
	t.budget.Grow(-int64(len(t.slots)) * 16)
	t.slots = nil
}

// mergeSet folds the groups of src, with their states, into gs: the
// partial states of decomposable aggregates, and a DISTINCT aggregate's
// set of (group, value) pairs, whose values gs's states fold in as input.
func (gs *groupSet) mergeSet(h *Hasher, src *groupSet, b *Budget) error {
	n := src.table.Len()
	if n == 0 {
		return nil
	}
	// remap[g] is the group in gs of src's group g.
	if err := b.Grow(int64(n) * 4); err != nil {
		return fmt.Errorf("merging the workers' tables: %w", err)
	}
	defer b.Grow(-int64(n) * 4)
	remap := make([]uint32, n)
	keys := make([]*vec.Vector, len(src.table.Keys()))
	hashes := make([]uint64, min(n, mergeChunk))
	for lo := 0; lo < n; lo += mergeChunk {
		hi := min(lo+mergeChunk, n)
		for c, k := range src.table.Keys() {
			keys[c] = k.Slice(lo, hi)
		}
		h.Hash(keys, hi-lo, hashes)
		gids, err := gs.group(keys, hashes, hi-lo)
		if err != nil {
			return err
		}
		copy(remap[lo:hi], gids)
	}
	for j, st := range gs.states {
		from := src.states[j]
		var err error
		switch {
		case from.pset != nil:
			err = st.mergePairs(from, remap)
		case from.set != nil:
			err = st.mergeDistinct(from, remap)
		default:
			err = st.Merge(remap, from.partial(n), n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mergeDistinct folds the (group, value) pairs src's set holds into s,
// src's groups mapped to s's by remap: a value s had not seen for that
// group counts (or adds to the sum) as an input row would.
func (s *State) mergeDistinct(src *State, remap []uint32) error {
	pk := src.set.Keys()
	np := src.set.Len()
	gids := make([]uint32, min(np, mergeChunk))
	for lo := 0; lo < np; lo += mergeChunk {
		hi := min(lo+mergeChunk, np)
		for i, g := range pk[0].I64[lo:hi] {
			gids[i] = remap[g]
		}
		if err := s.Update(gids[:hi-lo], pk[1].Slice(lo, hi), hi-lo); err != nil {
			return err
		}
	}
	return nil
}
