package agg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/vec"
)

// Strategy selects how a GROUP BY is executed.
type Strategy uint8

// The strategies. Radix with Threads > 1 is the parallel strategy.
const (
	Naive Strategy = iota
	Radix
)

// Input is one morsel of the operator's input, already filtered and with
// key and aggregate input expressions evaluated.
type Input struct {
	Keys []*vec.Vector
	Args []*vec.Vector // one per Spec; nil for count(*)
	N    int
}

// Source returns the next morsel for a worker, or ok=false when the input is
// exhausted. It must be safe for concurrent use by several workers.
type Source func(worker int) (in Input, ok bool, err error)

// Observer receives worker and phase events on the worker's own goroutine.
// Every field may be nil.
type Observer struct {
	LockThreads bool
	WorkerStart func(worker int)
	WorkerStop  func(worker int)
	PhaseStart  func(worker int, phase string)
	PhaseEnd    func(worker int, phase string)
}

// Config configures one aggregation.
type Config struct {
	Strategy  Strategy
	Threads   int // workers for Radix; 1 runs on the calling goroutine
	RadixBits int // partitions = 1 << RadixBits for Radix
	Budget    *Budget
	Hasher    *Hasher
	Observer  Observer
	// HugePages puts large tables and partition buffers on huge pages
	// (Linux only; ignored elsewhere).
	HugePages bool
	// Pool, if set, keeps huge-page mappings between queries.
	Pool *Pool
	// RowsHint is the number of input rows, if known: partition buffers
	// are sized from it.
	RowsHint int64
	// GroupsHint is the estimated number of groups (0: unknown): the
	// first radix partitions' tables are sized from it.
	GroupsHint int64
	// Parts leaves a radix aggregation's result in its partitions'
	// pieces (Output.Parts) instead of copying them into one set of
	// columns, for a caller that can take the groups piece by piece.
	Parts bool
	// Emit, if set, receives a radix aggregation's groups partition by
	// partition, each as soon as it is aggregated, instead of Output.Parts
	// or Output.Keys holding them all at the end: a consumer that is done
	// with a partition's groups before the next (an aggregate over them, a
	// top-N, a LIMIT) lets the garbage collector reuse their memory for
	// the next partitions', instead of the query touching fresh memory for
	// every group. It is called on the goroutine that called Aggregate,
	// one part at a time; the part is the caller's, no longer charged to
	// Budget. An error from Emit ends the aggregation, which returns it.
	// The tuned integer count path and naive ignore Emit and return
	// their groups as before.
	Emit func(Part) error
	// Generic disables the tuned single-integer-key count(*) path, so the
	// general hash table and states run even for that shape.
	Generic bool
	// PreAggGroups is the number of groups each radix worker's
	// pre-aggregation table holds before it is flushed into the
	// partitions: 0 means DefaultPreAggGroups, a negative number turns
	// pre-aggregation off. It applies to the generic path when every
	// aggregate can be split into partial states (see preagg.go).
	PreAggGroups int
}

// WorkerStat is one worker's share of one phase.
type WorkerStat struct {
	Worker int
	Phase  string
	Rows   int64
	Time   time.Duration
}

// Output is the result of an aggregation: one row per group.
type Output struct {
	Keys   []*vec.Vector
	Aggs   []*vec.Vector
	Groups int
	// Stats per worker and phase, in the order they finished.
	Stats []WorkerStat
	// TableSlots is the largest hash table's capacity in slots.
	TableSlots int
	// KeyBytes is the memory of the output's key columns (as the hash
	// tables stored them) still charged to Config.Budget: the caller,
	// which charges the output it holds, releases it.
	KeyBytes int64
	// Parts, when Config.Parts asked for it and the aggregation was
	// partitioned, holds the groups as pieces (each a partition's keys
	// then aggregates, as Keys and Aggs would), and Keys and Aggs are nil.
	Parts []Part
	// Emitted says that the groups went through Config.Emit: Keys, Aggs
	// and Parts are nil, and Groups counts what Emit received.
	Emitted bool
	// PreAgg says what pre-aggregation before partitioning did, summed
	// over the workers (its Window is 0 when it did not run).
	PreAgg PreAggStats
}

// Part is a piece of an aggregation's groups: one radix partition's, or
// one parallel worker's.
type Part struct {
	Keys, Aggs []*vec.Vector
	Groups     int
}

// Aggregate runs a GROUP BY over src. keyTypes may be empty (a global
// aggregate: one group, even over empty input).
func Aggregate(ctx context.Context, keyTypes []vec.Type, specs []Spec, cfg Config, src Source) (*Output, error) {
	if cfg.Hasher == nil {
		cfg.Hasher = NewHasher()
	}
	if len(keyTypes) == 0 {
		return global(ctx, specs, cfg, src)
	}
	if !cfg.Generic && countFast(keyTypes, specs) {
		if cfg.Strategy == Naive {
			return countNaive(ctx, keyTypes[0], len(specs), cfg, src)
		}
		return countRadix(ctx, keyTypes[0], len(specs), cfg, src)
	}
	if cfg.Strategy == Naive {
		return naive(ctx, keyTypes, specs, cfg, src)
	}
	return radix(ctx, keyTypes, specs, cfg, src)
}

// groupSet is a hash table with the states of its groups.
type groupSet struct {
	table  *Table
	states []*State
	hashes []uint64
	gids   []uint32
}

func newGroupSet(keyTypes []vec.Type, specs []Spec, hint int, cfg Config) (*groupSet, error) {
	t, err := NewTable(keyTypes, hint, cfg.Budget)
	if err != nil {
		return nil, err
	}
	gs := &groupSet{table: t}
	return gs, gs.newStates(specs, cfg)
}

// newStates gives the set's groups fresh aggregate states.
func (gs *groupSet) newStates(specs []Spec, cfg Config) error {
	gs.states = gs.states[:0]
	for _, sp := range specs {
		st, err := NewState(sp, cfg.Hasher, cfg.Budget)
		if err != nil {
			return err
		}
		gs.states = append(gs.states, st)
	}
	return nil
}

// restart empties the set for about hint groups of its own, keeping its
// table's slots (Table.restart): its keys and finished states went out as
// output.
func (gs *groupSet) restart(specs []Spec, hint int, cfg Config) error {
	if err := gs.table.restart(hint); err != nil {
		return err
	}
	return gs.newStates(specs, cfg)
}

// group finds or creates the groups of n rows whose hashes are known and
// makes room for them in every state.
func (gs *groupSet) group(keys []*vec.Vector, hashes []uint64, n int) ([]uint32, error) {
	if cap(gs.gids) < n {
		gs.gids = make([]uint32, n)
	}
	gids := gs.gids[:n]
	if err := gs.table.Group(keys, hashes, n, gids); err != nil {
		return nil, err
	}
	for _, st := range gs.states {
		if err := st.Resize(gs.table.Len()); err != nil {
			return nil, err
		}
	}
	return gids, nil
}

// add folds rows whose hashes are already known into the set.
func (gs *groupSet) add(keys, args []*vec.Vector, hashes []uint64, n int) error {
	gids, err := gs.group(keys, hashes, n)
	if err != nil {
		return err
	}
	for j, st := range gs.states {
		if err := st.Update(gids, args[j], n); err != nil {
			return err
		}
	}
	return nil
}

// merge folds partial states (columns as State.partial returns them, every
// aggregate's in turn) of groups whose hashes are known into the set.
func (gs *groupSet) merge(keys, partial []*vec.Vector, hashes []uint64, n int) error {
	gids, err := gs.group(keys, hashes, n)
	if err != nil {
		return err
	}
	for _, st := range gs.states {
		k := len(partialTypes(st.spec))
		if err := st.Merge(gids, partial[:k], n); err != nil {
			return err
		}
		partial = partial[k:]
	}
	return nil
}

func (gs *groupSet) addHashing(h *Hasher, in Input) error {
	if cap(gs.hashes) < in.N {
		gs.hashes = make([]uint64, in.N)
	}
	h.Hash(in.Keys, in.N, gs.hashes)
	return gs.add(in.Keys, in.Args, gs.hashes, in.N)
}

// finalize returns the aggregates' columns. The states are done with:
// their memory is returned to the budget, and whoever takes the columns
// charges them.
func (gs *groupSet) finalize() ([]*vec.Vector, error) {
	out := make([]*vec.Vector, len(gs.states))
	for j, st := range gs.states {
		v, err := st.Finalize(gs.table.Len())
		if err != nil {
			return nil, err
		}
		out[j] = v
	}
	for _, st := range gs.states {
		st.release()
	}
	return out, nil
}

func (cfg *Config) phase(worker int, name string, f func() (int64, error)) (WorkerStat, error) {
	if cfg.Observer.PhaseStart != nil {
		cfg.Observer.PhaseStart(worker, name)
	}
	start := time.Now()
	rows, err := f()
	d := time.Since(start)
	if cfg.Observer.PhaseEnd != nil {
		cfg.Observer.PhaseEnd(worker, name)
	}
	return WorkerStat{Worker: worker, Phase: name, Rows: rows, Time: d}, err
}

func naive(ctx context.Context, keyTypes []vec.Type, specs []Spec, cfg Config, src Source) (*Output, error) {
	gs, err := newGroupSet(keyTypes, specs, 0, cfg)
	if err != nil {
		return nil, err
	}
	st, err := cfg.phase(0, "aggregate", func() (int64, error) {
		var rows int64
		for {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			in, ok, err := src(0)
			if err != nil || !ok {
				return rows, err
			}
			if err := gs.addHashing(cfg.Hasher, in); err != nil {
				return rows, err
			}
			rows += int64(in.N)
		}
	})
	if err != nil {
		return nil, err
	}
	aggs, err := gs.finalize()
	if err != nil {
		return nil, err
	}
	return &Output{Keys: gs.table.Keys(), Aggs: aggs, Groups: gs.table.Len(), Stats: []WorkerStat{st}, TableSlots: gs.table.Slots(), KeyBytes: gs.table.KeyBytes()}, nil
}

func global(ctx context.Context, specs []Spec, cfg Config, src Source) (*Output, error) {
	gs := &groupSet{}
	for _, sp := range specs {
		s, err := NewState(sp, cfg.Hasher, cfg.Budget)
		if err != nil {
			return nil, err
		}
		if err := s.Resize(1); err != nil {
			return nil, err
		}
		gs.states = append(gs.states, s)
	}
	st, err := cfg.phase(0, "aggregate", func() (int64, error) {
		var rows int64
		for {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			in, ok, err := src(0)
			if err != nil || !ok {
				return rows, err
			}
			if cap(gs.gids) < in.N {
				gs.gids = make([]uint32, in.N) // all zero: the one group
			}
			for j, s := range gs.states {
				if err := s.Update(gs.gids[:in.N], in.Args[j], in.N); err != nil {
					return rows, err
				}
			}
			rows += int64(in.N)
		}
	})
	if err != nil {
		return nil, err
	}
	out := &Output{Groups: 1, Stats: []WorkerStat{st}}
	for _, s := range gs.states {
		v, err := s.Finalize(1)
		if err != nil {
			return nil, err
		}
		out.Aggs = append(out.Aggs, v)
	}
	return out, nil
}

// radix aggregates in two phases: every worker scatters its morsels into its
// own partitions; then each partition, across all workers' buffers, is
// aggregated by one worker in a table sized for that partition alone.
func radix(ctx context.Context, keyTypes []vec.Type, specs []Spec, cfg Config, src Source) (*Output, error) {
	threads := cfg.Threads
	if threads < 1 {
		threads = 1
	}
	bits := cfg.RadixBits
	if bits < 0 || bits > 16 {
		return nil, fmt.Errorf("radix_bits must be between 0 and 16, got %d", bits)
	}
	nparts := 1 << bits
	rowsHint := cfg.RowsHint
	if threads > 1 {
		rowsHint = rowsHint * 3 / 2 / int64(threads)
	}
	scats := make([]*scatterer, threads)
	// With pre-aggregation each worker also has partitions of partial
	// groups (pres[slot].part), which the second phase merges.
	var pres []*preAgg
	window := cfg.PreAggGroups
	if window == 0 {
		window = DefaultPreAggGroups
	}
	if PreAggregates(keyTypes, specs, cfg) {
		pres = make([]*preAgg, threads)
	}
	outKeys := make([][]*vec.Vector, nparts)
	outAggs := make([][]*vec.Vector, nparts)
	var maxSlots atomic.Int64
	var nextPart atomic.Int64
	var keyBytes atomic.Int64 // the partitions' stored keys, charged until the caller takes them
	sizer := newPartSizer(len(keyTypes), cfg.GroupsHint, nparts)
	var mu sync.Mutex
	var stats []WorkerStat
	record := func(s WorkerStat) {
		mu.Lock()
		stats = append(stats, s)
		mu.Unlock()
	}

	// emit hands one partition's groups on (Config.Emit): directly with
	// one thread; with several, through parts to the calling goroutine,
	// which relay runs, and which emit waits for while the consumer is
	// busy (at most one part per worker waits in the channel). quit is
	// closed when the consumer wants no more.
	var emit func(Part) error
	var emitted atomic.Int64 // groups handed on
	var parts chan Part
	quit := make(chan struct{})
	hand := func(p Part) error {
		emitted.Add(int64(p.Groups))
		return cfg.Emit(p)
	}
	if cfg.Emit != nil {
		emit = hand
		if threads > 1 {
			parts = make(chan Part, threads)
			emit = func(p Part) error {
				select {
				case parts <- p:
					return nil
				case <-quit:
					return errQuit
				}
			}
		}
	}

	arenas := make([]*Arena, threads)
	for i := range arenas {
		arenas[i] = NewArena(cfg.HugePages, cfg.Pool)
		defer arenas[i].Free()
	}
	// A worker's partitions beyond its share of the mappings the pool
	// keeps now are fresh memory, which pre-aggregation weighs. Go's heap
	// does not say, so without huge-page arenas none counts as fresh.
	reused := int64(math.MaxInt64)
	if arenas[0].Huge() {
		reused = cfg.Pool.kept() / int64(threads)
	}

	// partitionPhase runs on worker w.
	partitionPhase := func(w, slot int) error {
		sc := newScatterer(bits, keyTypes, specs, rowsHint, arenas[slot])
		sc.slab.budget = cfg.Budget // blocks are charged as they are taken
		scats[slot] = sc
		var pa *preAgg
		if pres != nil {
			// Sized for few rows until a window shows what they keep.
			part := partialScatterer(bits, keyTypes, specs, 0, arenas[slot])
			part.slab.budget = cfg.Budget
			var err error
			if pa, err = newPreAgg(keyTypes, specs, window, part, rowsHint, cfg); err != nil {
				return err
			}
			pa.unfolded, pa.reused = sc, reused
			pres[slot] = pa
		}
		st, err := cfg.phase(w, "partition", func() (int64, error) {
			var rows int64
			for {
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				in, ok, err := src(w)
				if err != nil || !ok {
					if err == nil && pa != nil {
						if err = pa.flush(); err != nil {
							err = fmt.Errorf("radix partitions: %w", err)
						}
					}
					return rows, err
				}
				rows += int64(in.N)
				var hs []uint64 // the rows' hashes, if folding computed them
				if pa != nil && !pa.skipping(in.N) {
					if in, hs, err = pa.fold(in); err != nil {
						return rows, fmt.Errorf("radix partitions: %w", err)
					}
					if in.N == 0 {
						continue
					}
				}
				if hs != nil {
					err = sc.scatterHashed(in, hs)
				} else {
					err = sc.scatter(cfg.Hasher, in)
				}
				if err != nil {
					return rows, fmt.Errorf("radix partitions: %w", err)
				}
			}
		})
		record(st)
		return err
	}
	aggregatePhase := func(w int) error {
		// The worker's groups: each partition's start in the table of
		// the last one (restart), whose slots stay charged until the end.
		var gs *groupSet
		defer func() {
			if gs != nil {
				cfg.Budget.Grow(-int64(gs.table.Slots()) * 16)
			}
		}()
		var handing time.Duration // in emit: the consumer's time, not the phase's
		st, err := cfg.phase(w, "aggregate", func() (int64, error) {
			var rows int64
			err := claimPartitions(ctx, &nextPart, nparts, func(p int) error {
				var n int
				for _, sc := range scats {
					n += sc.parts[p].rows
				}
				for _, pa := range pres {
					n += pa.part.parts[p].rows
				}
				if n == 0 {
					return nil
				}
				groups, keyRows, reserve := sizer.predict(n)
				var err error
				if gs == nil {
					gs, err = newGroupSet(keyTypes, specs, groups, cfg)
				} else {
					err = gs.restart(specs, groups, cfg)
				}
				if err != nil {
					return err
				}
				// The stored keys become the output, which outlives the
				// arenas, so they stay on Go's heap and its 4 KiB pages.
				// Carving them from heap blocks advised for huge pages
				// made a fresh process's GROUP BY URL 9% faster, but
				// every later query of that process about 19% slower,
				// even with the advice withdrawn once the keys were
				// written (7 pairs of processes; this VM, THP=madvise).
				if err := gs.table.Reserve(keyRows, reserve); err != nil {
					return err
				}
				for _, sc := range scats {
					for _, c := range sc.parts[p].chunks {
						m := len(c.hashes)
						if err := gs.add(c.keys, c.args, c.hashes, m); err != nil {
							return err
						}
						rows += int64(m)
					}
				}
				for _, pa := range pres {
					for _, c := range pa.part.parts[p].chunks {
						m := len(c.hashes)
						if err := gs.merge(c.keys, c.args, c.hashes, m); err != nil {
							return err
						}
						rows += int64(m)
					}
				}
				aggs, err := gs.finalize()
				if err != nil {
					return err
				}
				sizer.record(gs.table)
				if s := int64(gs.table.Slots()); s > maxSlots.Load() {
					maxSlots.Store(s)
				}
				if emit != nil {
					// The keys leave the budget with the part: the
					// consumer charges what it holds (a part waiting in
					// the channel is briefly charged to neither).
					cfg.Budget.Grow(-gs.table.KeyBytes())
					if gs.table.Len() == 0 {
						return nil
					}
					t0 := time.Now()
					err := emit(Part{Keys: gs.table.Keys(), Aggs: aggs, Groups: gs.table.Len()})
					handing += time.Since(t0)
					return err
				}
				outKeys[p], outAggs[p] = gs.table.Keys(), aggs
				keyBytes.Add(gs.table.KeyBytes())
				return nil
			})
			return rows, err
		})
		st.Time -= handing
		record(st)
		return err
	}

	run := func() error {
		return cfg.twoPhases(threads, partitionPhase, func(w, slot int) error { return aggregatePhase(w) })
	}
	var err error
	if parts != nil {
		err = relay(run, parts, quit, hand)
	} else {
		err = run()
	}
	if err != nil {
		return nil, err
	}

	out := &Output{Stats: stats, TableSlots: int(maxSlots.Load()), KeyBytes: keyBytes.Load()}
	for _, pa := range pres {
		out.PreAgg.add(pa.stats)
	}
	release := func() {
		for _, sc := range scats {
			if sc != nil {
				cfg.Budget.Grow(-sc.bytes)
			}
		}
		for _, pa := range pres {
			if pa != nil {
				cfg.Budget.Grow(-pa.part.bytes)
				pa.release(cfg.Budget)
			}
		}
	}
	if emit != nil {
		release()
		out.Groups, out.Emitted = int(emitted.Load()), true
		return out, nil
	}
	if cfg.Parts {
		for p := range outKeys {
			if outKeys[p] != nil && outKeys[p][0].Len > 0 {
				out.Parts = append(out.Parts, Part{Keys: outKeys[p], Aggs: outAggs[p], Groups: outKeys[p][0].Len})
				out.Groups += outKeys[p][0].Len
			}
		}
		if len(out.Parts) > 0 {
			release()
			return out, nil
		}
		out.Groups = 0 // no groups: empty columns of the right types, below
	}
	outTypes := make([]vec.Type, len(specs))
	for j, sp := range specs {
		outTypes[j] = sp.OutType()
	}
	out.Keys, err = concat(keyTypes, outKeys)
	if err == nil {
		out.Aggs, err = concat(outTypes, outAggs)
	}
	release()
	if err != nil {
		return nil, err
	}
	if len(out.Keys) > 0 {
		out.Groups = out.Keys[0].Len
	}
	return out, nil
}

// partSizer predicts the groups and string key bytes of a radix
// partition's table from the partitions aggregated before it. Hashing
// spreads the distinct keys evenly over the partitions, though not the
// rows (one hot key puts most rows in one partition), so a partition is
// expected to hold about the average groups of the others whatever its
// rows, each with about the average key bytes. A good prediction lets a
// table be allocated once instead of growing by doubling; the first
// partitions use the estimate of the groups when there is one, and a wrong
// guess falls back to growing.
type partSizer struct {
	mu          sync.Mutex
	parts       int     // partitions recorded
	groups      int64   // their groups
	kept        []int64 // their keys' string bytes, per key column
	firstGroups int     // groups expected per partition before any is recorded (0: unknown)
}

// newPartSizer returns a sizer for keys key columns; groupsHint is the
// estimated groups of the whole input (0: unknown), over nparts partitions.
func newPartSizer(keys int, groupsHint int64, nparts int) *partSizer {
	ps := &partSizer{kept: make([]int64, keys)}
	if groupsHint > 0 && nparts > 0 {
		ps.firstGroups = int(groupsHint/int64(nparts)) + 16
	}
	return ps
}

// predict returns, for a partition of rows rows, the groups to size its
// table for, and the groups and (per key column) string bytes to reserve
// its stored keys for.
//
// The table gets a quarter more than the average, so that most partitions
// fit without growing. The keys get less: Go zeroes a slice's whole
// capacity when it allocates it, so every byte reserved is written, and on
// fresh memory faulted in, whether a key ends up in it or not. A partition
// holds a share of the distinct keys that hashing makes nearly even (one of
// 20,000 groups is off by about 1%, its key bytes by a little more), so the
// keys get a sixteenth more than the average, and the rare partition beyond
// it grows.
func (ps *partSizer) predict(rows int) (groups, keyRows int, keyBytes []int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.parts < 2 || ps.groups == 0 {
		groups = rows / 2
		if ps.firstGroups > 0 {
			groups = min(groups, ps.firstGroups*2)
		}
		return groups, groups, nil
	}
	avg := ps.groups / int64(ps.parts)
	groups = int(min(int64(rows), avg*5/4+16))
	keyRows = int(min(int64(rows), avg*17/16+16))
	keyBytes = make([]int64, len(ps.kept))
	for c, k := range ps.kept {
		keyBytes[c] = k * int64(keyRows) / ps.groups
	}
	return groups, keyRows, keyBytes
}

// record adds an aggregated partition's figures.
func (ps *partSizer) record(t *Table) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.parts++
	ps.groups += int64(t.Len())
	for c, k := range t.Keys() {
		if c < len(ps.kept) {
			ps.kept[c] += int64(len(k.Bytes))
		}
	}
}

// concat joins the partitions' output columns, each sized once: column c
// of the result holds column c of every partition in turn (nil partitions
// held no rows).
func concat(types []vec.Type, parts [][]*vec.Vector) ([]*vec.Vector, error) {
	out := make([]*vec.Vector, len(types))
	col := make([]*vec.Vector, 0, len(parts))
	for c, t := range types {
		col = col[:0]
		for _, vs := range parts {
			if vs != nil {
				col = append(col, vs[c])
			}
		}
		v, err := vec.Concat(t, col)
		if err != nil {
			return nil, fmt.Errorf("the groups' column %d: %w", c+1, err)
		}
		out[c] = v
	}
	return out, nil
}

// twoPhases runs phase one on every worker, waits for all of them, then
// runs phase two on every worker. With one thread both run on the calling
// goroutine as worker 0; otherwise worker w (1..threads) runs on its own
// goroutine, locked to its OS thread when the observer asks, with the
// observer's WorkerStart and WorkerStop around both phases. slot is w's
// index from 0.
func (cfg *Config) twoPhases(threads int, one, two func(w, slot int) error) error {
	if threads == 1 {
		if err := one(0, 0); err != nil {
			return err
		}
		return two(0, 0)
	}
	var wg sync.WaitGroup
	errs := make([]error, threads)
	errs2 := make([]error, threads)
	var barrier sync.WaitGroup
	barrier.Add(threads)
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			w := t + 1
			if cfg.Observer.LockThreads {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			if stop := cfg.Observer.WorkerStop; stop != nil {
				defer func() {
					if err := safely(w, func() error { stop(w); return nil }); err != nil && errs2[t] == nil {
						errs2[t] = err
					}
				}()
			}
			errs[t] = safely(w, func() error {
				if cfg.Observer.WorkerStart != nil {
					cfg.Observer.WorkerStart(w)
				}
				return one(w, t)
			})
			barrier.Done()
			barrier.Wait()
			if anyErr(errs) != nil {
				return
			}
			errs2[t] = safely(w, func() error { return two(w, t) })
		}(t)
	}
	wg.Wait()
	return anyErr(append(errs, errs2...))
}

// errQuit is what a worker's emit returns once the consumer of the groups
// wants no more; relay returns the consumer's own error instead.
var errQuit = errors.New("the consumer of the groups stopped")

// relay runs the workers (run) while it hands the parts they send on to
// hand, on the calling goroutine. Once hand fails it closes quit, so that
// workers waiting to send give up, and drops what is still sent; it
// returns hand's error before the workers'.
func relay(run func() error, parts chan Part, quit chan struct{}, hand func(Part) error) error {
	done := make(chan error, 1)
	go func() { done <- safely(0, run) }()
	var handErr error
	take := func(p Part) {
		if handErr != nil {
			return
		}
		if handErr = hand(p); handErr != nil {
			close(quit)
		}
	}
	for {
		select {
		case p := <-parts:
			take(p)
		case err := <-done:
			for len(parts) > 0 { // sent before the last worker ended
				take(<-parts)
			}
			if handErr != nil {
				return handErr
			}
			return err
		}
	}
}

// claimPartitions hands partitions 0..nparts-1 out to workers through the
// shared counter next: each call of visit gets a partition no other worker
// gets. The context is checked every 64 partitions.
func claimPartitions(ctx context.Context, next *atomic.Int64, nparts int, visit func(p int) error) error {
	for {
		p := int(next.Add(1) - 1)
		if p >= nparts {
			return nil
		}
		if p%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := visit(p); err != nil {
			return err
		}
	}
}

// PanicError is a panic recovered on a worker goroutine, returned as the
// statement's error: a bug in one query must not end the process, which in
// the server is every learner's kernel.
type PanicError struct {
	Worker int
	Value  any
	Stack  []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error in GROUP BY worker %d: %v", e.Worker, e.Value)
}

// safely runs f, turning a panic into a *PanicError.
func safely(worker int, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Worker: worker, Value: p, Stack: debug.Stack()}
		}
	}()
	return f()
}

func anyErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
