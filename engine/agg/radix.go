package agg

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"cachebook/engine/vec"
)

// radix aggregates in two phases: Sink scatters each worker's morsels into
// its own partitions (after pre-aggregation, where it applies); Next
// aggregates one partition, across all workers' buffers, in a table sized
// for that partition alone, and hands its groups out.
type radix struct {
	cfg      Config
	keyTypes []vec.Type
	specs    []Spec
	bits     int
	rowsHint int64 // rows per worker expected
	window   int   // pre-aggregation's groups per table (0: off)
	reused   int64 // partition bytes per worker the pool kept

	// Per worker: its arena, its partitions, its pre-aggregation (with
	// partitions of partial groups, merged by Next) and its table, whose
	// slots stay charged from one partition to the next.
	arenas []*Arena
	scats  []*scatterer
	pres   []*preAgg
	sets   []*groupSet
	// rehashed is a worker's scratch for the hashes of a chunk of
	// hashless partitions, rehashedBytes what all of them charged.
	rehashed      [][]uint64
	rehashedBytes atomic.Int64

	sizer    *partSizer
	nextPart atomic.Int64
	groups   atomic.Int64
	maxSlots atomic.Int64
	left     atomic.Int64 // partitions not yet aggregated
	closed   bool

	spill spiller // the files, once a worker spilled
	// groupBits gives the groups of partitions each worker's slabs
	// carve (2^groupBits, 0: one slab), and maxBlock bounds their
	// blocks (0: slabBlock).
	groupBits, maxBlock int
	// out says, per worker and group of partitions, that the group
	// spilled to make room and spills again whenever the worker does.
	out        [][]bool
	spillParts int   // spill partitions written
	kept       int64 // partition bytes kept in memory once spilled
	whole      int   // spill partitions kept wholly in memory
	noSpill    atomic.Bool
}

func newRadix(keyTypes []vec.Type, specs []Spec, cfg Config) (*radix, error) {
	threads := cfg.threads()
	a := &radix{cfg: cfg, keyTypes: keyTypes, specs: specs, bits: cfg.RadixBits, rowsHint: cfg.RowsHint,
		arenas: make([]*Arena, threads), scats: make([]*scatterer, threads), sets: make([]*groupSet, threads), out: make([][]bool, threads),
		rehashed: make([][]uint64, threads),
		sizer:    newPartSizer(len(keyTypes), cfg.GroupsHint, 1<<cfg.RadixBits)}
	a.left.Store(1 << cfg.RadixBits)
	if threads > 1 {
		a.rowsHint = a.rowsHint * 3 / 2 / int64(threads)
	}
	if PreAggregates(keyTypes, specs, cfg) {
		a.pres = make([]*preAgg, threads)
		a.window = cfg.PreAggGroups
		if a.window == 0 {
			a.window = defaultWindow(keyTypes, specs)
		}
		if cfg.SpillAt > 0 && cfg.Spill != nil {
			// Each worker's window table stays a small share of the
			// partitions' part of the limit.
			a.window = int(min(int64(a.window), max(1024, cfg.SpillAt/int64(threads*4096))))
		}
	}
	for i := range a.arenas {
		a.arenas[i] = NewArena(cfg.HugePages, cfg.Pool)
	}
	if cfg.SpillAt > 0 && cfg.Spill != nil {
		// Blocks small enough that a worker's share of the partitions
		// spills in several steps and, where the partitions are
		// expected to spill, a slab of its own per group of
		// partitions, so that a spill writes only the groups it must;
		// groups only where each one's blocks stay large enough to be
		// worth a mapping of their own.
		per := cfg.SpillAt / int64(16*threads)
		if cfg.SpillGroups {
			for a.groupBits = min(spillGroupBits, a.bits); a.groupBits > 0 && per>>a.groupBits < slabFirst; a.groupBits-- {
			}
		}
		a.maxBlock = int(max(slabFirst>>a.groupBits, min(slabBlock, per>>a.groupBits)))
	}
	// A worker's partitions beyond its share of the mappings the pool
	// keeps now are fresh memory, which pre-aggregation weighs. Go's heap
	// does not say, so without huge-page arenas none counts as fresh.
	a.reused = int64(math.MaxInt64)
	if a.arenas[0].Huge() {
		a.reused = cfg.Pool.kept() / int64(threads)
	}
	return a, nil
}

func (a *radix) Workers() int { return len(a.scats) }

// start gives worker w its partitions and pre-aggregation.
func (a *radix) start(w int) error {
	sc := newScatterer(a.bits, a.keyTypes, a.specs, a.rowsHint, a.arenas[w])
	sc.useBudget(a.cfg.Budget, a.maxBlock) // blocks are charged as they are taken
	newArena := func() *Arena { return NewArena(a.cfg.HugePages, a.cfg.Pool) }
	if a.cfg.Spill != nil {
		sc.splitSlabs(a.groupBits, newArena)
		a.out[w] = make([]bool, len(sc.slabs))
	}
	a.scats[w] = sc
	if a.pres == nil {
		return nil
	}
	// Sized for few rows until a window shows what they keep.
	part := partialScatterer(a.bits, a.keyTypes, a.specs, 0, a.arenas[w])
	part.useBudget(a.cfg.Budget, a.maxBlock)
	part.spillKind = 1
	if a.cfg.Spill != nil {
		part.splitSlabs(a.groupBits, newArena)
	}
	pa, err := newPreAgg(a.keyTypes, a.specs, a.window, part, a.rowsHint, a.cfg, true)
	if err != nil {
		return err
	}
	pa.unfolded, pa.reused = sc, a.reused
	pa.scatter = func(in Input, hs []uint64) error { return a.scatterSpilling(w, part, in, hs) }
	pa.reserve = func(keys []*vec.Vector, hs []uint64) error { return a.reserveSpilling(w, keys, hs) }
	a.pres[w] = pa
	return nil
}

func (a *radix) Sink(w int, in Input) error {
	if a.scats[w] == nil {
		if err := a.start(w); err != nil {
			return err
		}
	}
	sc := a.scats[w]
	var hs []uint64 // the rows' hashes, if folding computed them
	if a.pres != nil && !a.pres[w].skipping(in.N) {
		var err error
		if in, hs, err = a.pres[w].fold(in); err != nil {
			return fmt.Errorf("radix partitions: %w", err)
		}
		if in.N == 0 {
			return nil
		}
	}
	if hs == nil {
		if cap(sc.hashes) < in.N {
			sc.hashes = make([]uint64, in.N)
		}
		hs = sc.hashes[:in.N]
		a.cfg.Hasher.Hash(in.Keys, in.N, hs)
	}
	if err := a.scatterSpilling(w, sc, in, hs); err != nil {
		return fmt.Errorf("radix partitions: %w", err)
	}
	return nil
}

func (a *radix) Flush(w int) error {
	if a.scats[w] == nil {
		if err := a.start(w); err != nil {
			return err
		}
	}
	if a.pres != nil {
		if err := a.pres[w].flush(); err != nil {
			return fmt.Errorf("radix partitions: %w", err)
		}
		if a.pres[w].dw != nil {
			// Charges what the partial states took.
			if err := a.reserveSpilling(w, nil, nil); err != nil {
				return fmt.Errorf("radix partitions: %w", err)
			}
		}
	}
	return nil
}

func (a *radix) Finalize(ctx context.Context) error { return a.finishSpill(ctx) }

// Next aggregates the next partition that has rows with worker w's table.
func (a *radix) Next(ctx context.Context, w int) (Part, bool, error) {
	nparts, aggregate := 1<<a.bits, a.aggregate
	if a.spill.done {
		nparts, aggregate = len(a.spill.rows), a.aggregateSpilled
	}
	for {
		if a.spill.done {
			// The parts of a split spill partition first.
			part, ok, err := a.nextPending(w)
			if err != nil || ok && part.Groups > 0 {
				return part, err == nil, err
			}
			if ok {
				continue
			}
			if err := ctx.Err(); err != nil {
				return Part{}, false, err
			}
		}
		p, ok, err := claim(ctx, &a.nextPart, nparts)
		if err != nil || !ok {
			return Part{}, false, err
		}
		part, err := aggregate(w, p)
		a.left.Add(-1)
		if err != nil || part.Groups > 0 {
			return part, err == nil, err
		}
	}
}

// groupSet returns worker w's group set, made or restarted for about
// groups groups.
func (a *radix) groupSet(w, groups int) (*groupSet, error) {
	gs := a.sets[w]
	if gs == nil {
		gs, err := newGroupSet(a.keyTypes, a.specs, groups, a.cfg)
		a.sets[w] = gs
		return gs, err
	}
	return gs, gs.restart(a.specs, groups, a.cfg)
}

// aggregate aggregates partition p with worker w's table; a partition
// without rows gives an empty part.
func (a *radix) aggregate(w, p int) (Part, error) {
	var n int
	for _, sc := range a.scats {
		n += sc.parts[p].rows
	}
	for _, pa := range a.pres {
		n += pa.part.parts[p].rows
	}
	if n == 0 {
		return Part{}, nil
	}
	groups, keyRows, reserve := a.sizer.predict(n)
	gs, err := a.groupSet(w, groups)
	if err != nil {
		return Part{}, err
	}
	// The stored keys become the output, which outlives the arenas, so
	// they stay on Go's heap and its 4 KiB pages. Carving them from heap
	// blocks advised for huge pages made a fresh process's GROUP BY URL 9%
	// faster, but every later query of that process about 19% slower,
	// even with the advice withdrawn once the keys were written (7 pairs
	// of processes; this VM, THP=madvise).
	if err := gs.table.Reserve(keyRows, reserve); err != nil {
		return Part{}, err
	}
	var rows int64
	for _, sc := range a.scats {
		for _, c := range sc.parts[p].chunks {
			m := c.n
			if err := gs.add(c.keys, c.args, c.hashes, m); err != nil {
				return Part{}, err
			}
			rows += int64(m)
		}
	}
	for _, pa := range a.pres {
		for _, c := range pa.part.parts[p].chunks {
			m := c.n
			hs, err := a.hashesOf(w, pa.part, c)
			if err != nil {
				return Part{}, err
			}
			if err := gs.merge(c.keys, c.args, hs, m); err != nil {
				return Part{}, err
			}
			rows += int64(m)
		}
	}
	return a.finishPart(gs, rows)
}

// hashesOf returns the hashes of chunk c of sc's partitions: its own, or,
// where sc is hashless, its keys hashed again into worker w's scratch,
// which is charged as it grows.
func (a *radix) hashesOf(w int, sc *scatterer, c *chunk) ([]uint64, error) {
	if sc.rehash == nil {
		return c.hashes, nil
	}
	m := c.n
	if cap(a.rehashed[w]) < m {
		grow := int64(m-cap(a.rehashed[w])) * 8
		if err := a.cfg.Budget.Grow(grow); err != nil {
			return nil, fmt.Errorf("hashing a partition's keys again: %w", err)
		}
		a.rehashedBytes.Add(grow)
		a.rehashed[w] = make([]uint64, m)
	}
	hs := a.rehashed[w][:m]
	sc.rehash.Hash(c.keys, m, hs)
	return hs, nil
}

// finishPart hands out the groups of worker's table gs, which folded
// rows rows.
func (a *radix) finishPart(gs *groupSet, rows int64) (Part, error) {
	aggs, err := gs.finalize()
	if err != nil {
		return Part{}, err
	}
	a.sizer.record(gs.table)
	if s := int64(gs.table.Slots()); s > a.maxSlots.Load() {
		a.maxSlots.Store(s)
	}
	t := gs.table
	a.groups.Add(int64(t.Len()))
	part := Part{Keys: t.Keys(), Aggs: aggs, Groups: t.Len(), Rows: rows}
	if err := part.charge(a.cfg.Budget, t.KeyBytes()); err != nil {
		return Part{}, err
	}
	return part, nil
}

func (a *radix) Stats() Stats {
	st := Stats{SinkPhase: "partition", PerPartition: true, Groups: int(a.groups.Load()), Complete: a.left.Load() <= 0, TableSlots: int(a.maxSlots.Load())}
	for _, pa := range a.pres {
		if pa != nil {
			st.PreAgg.add(pa.stats)
		}
	}
	return st
}

// Close gives back the partitions, the pre-aggregation tables, the
// workers' tables' slots and the arenas.
func (a *radix) Close() {
	if a.closed {
		return
	}
	a.closed = true
	b := a.cfg.Budget
	for _, sc := range a.scats {
		if sc != nil {
			b.Grow(-sc.bytes)
			sc.free()
		}
	}
	for _, pa := range a.pres {
		if pa != nil {
			b.Grow(-pa.part.bytes)
			pa.part.free()
			pa.release(b)
		}
	}
	for _, gs := range a.sets {
		if gs != nil {
			b.Grow(-int64(gs.table.Slots()) * 16)
		}
	}
	b.Grow(-a.rehashedBytes.Swap(0))
	for _, ar := range a.arenas {
		ar.Free()
	}
}
