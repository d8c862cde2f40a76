package agg

import (
	"context"
	"fmt"
	"math"

	"cachebook/engine/vec"
)

// Tracing by observation: TraceAggregate runs the generic GROUP BY's own
// pieces (groupSet with its Table and States, scatterer, preAgg and its
// decision, partSizer) in the order Aggregate's naive and radix run them,
// and after each call reports the accesses the call made, read back from
// what it left behind: a row's probe sequence is the walk from its hash's
// slot to the slot of the group it got (every slot on the way was taken
// then and still is), the rows a scatter moved are in the chunks its
// partitions point to, an array that moved grew. So the traced pass makes
// the same tables, groups, partitions, pre-aggregation windows and
// flushes as the real run, for any key types the generic table takes,
// and only the accesses are a model. TestTraceMatchesReal pins it against
// Aggregate.

// TraceCol is where a column of a TraceInput is read from. A fixed-width
// column's value i is 8 bytes at Off + 8i of buffer Buf; a string
// column's offsets are 4 bytes each from OffOff in OffBuf (where
// Offsets[0] lies) and its bytes from Off in Buf (where Bytes[0] lies).
// Buf is -1 for a column that is not there (count(*)).
type TraceCol struct {
	Buf    int
	Off    int64
	OffBuf int
	OffOff int64
}

// from returns the column's view from row lo of v on.
func (c TraceCol) from(v *vec.Vector, lo int) TraceCol {
	if v != nil && v.Type == vec.String {
		c.OffOff += int64(lo) * 4
		return c
	}
	c.Off += int64(lo) * 8
	return c
}

// TraceInput is one morsel for TraceAggregate: the rows, as the engine
// hands them to Aggregate, and where each key and aggregate input column
// is read from.
type TraceInput struct {
	In   Input
	Keys []TraceCol
	Args []TraceCol
}

// TraceAggConfig is the part of Config a traced run of the generic path
// follows.
type TraceAggConfig struct {
	TraceConfig
	// PreAggGroups and GroupsHint are Config's.
	PreAggGroups int
	GroupsHint   int64
	// Hasher hashes the keys (nil: a new one); the real run's, to get the
	// same partitions for string keys.
	Hasher *Hasher
	// Reused is the partition bytes per worker that pre-aggregation
	// counts as reused memory before it judges windows by the bound for
	// fresh memory: PreAggReused of the real run's Config, taken when it
	// started (0: every partition byte is fresh).
	Reused int64
}

// PreAggReused returns the partition bytes per worker that a radix
// aggregation started now with cfg counts as memory its pool keeps
// (preAgg.reused): all of them (math.MaxInt64) without huge-page arenas,
// else the pool's kept mappings shared out over the workers.
func PreAggReused(cfg Config) int64 {
	a := NewArena(cfg.HugePages, cfg.Pool)
	defer a.Free()
	if !a.Huge() {
		return math.MaxInt64
	}
	return cfg.Pool.kept() / int64(max(cfg.Threads, 1))
}

// TraceAggStats is what a traced run built, for comparison with the real
// run's Output.
type TraceAggStats struct {
	Groups     int
	TableSlots int // the largest table's slots
	// PartGroups and PartRows are, per radix partition, its groups and
	// the rows (partial groups included) aggregated into them.
	PartGroups, PartRows []int
	// PartitionRows and AggregateRows are the rows of each phase, as
	// WorkerStat.Rows counts them.
	PartitionRows, AggregateRows int64
	PreAgg                       PreAggStats
	Accesses                     int64 // accesses and ranges reported
}

// ObservedTraceable reports whether TraceAggregate models an aggregation
// with these keys and aggregates: at least one key, none of type NULL, and
// aggregates other than DISTINCT ones over inputs that are not strings.
func ObservedTraceable(keyTypes []vec.Type, specs []Spec) bool {
	if len(keyTypes) == 0 {
		return false
	}
	for _, t := range keyTypes {
		if t == vec.Null {
			return false
		}
	}
	for _, s := range specs {
		if s.Kind == CountDistinct || s.Distinct || (s.HasInput() && (s.In == vec.String || s.In == vec.Null)) {
			return false
		}
	}
	return true
}

// TraceAggregate runs the generic GROUP BY (Config.Generic, or any shape
// the tuned count path does not take) over morsels as Aggregate runs it
// for cfg, reporting its accesses to tracer. With several threads the
// workers run one after another: worker w (1..Threads) takes the morsels
// i with i%Threads == w-1 and aggregates the partitions p with
// p%Threads == w-1.
func TraceAggregate(ctx context.Context, cfg TraceAggConfig, keyTypes []vec.Type, specs []Spec, morsels []TraceInput, tracer Tracer) (*TraceAggStats, error) {
	if !ObservedTraceable(keyTypes, specs) {
		return nil, fmt.Errorf("trace: this aggregation's shape is not traced")
	}
	tr := newTraceBuf(tracer)
	defer tr.flush()
	o := &observer{tr: tr, keyTypes: keyTypes, specs: specs, stats: &TraceAggStats{}, reused: cfg.Reused}
	o.cfg = Config{Strategy: cfg.Strategy, Threads: cfg.Threads, RadixBits: cfg.RadixBits, Budget: cfg.Budget, Hasher: cfg.Hasher,
		RowsHint: cfg.RowsHint, GroupsHint: cfg.GroupsHint, PreAggGroups: cfg.PreAggGroups, Generic: true}
	if o.cfg.Hasher == nil {
		o.cfg.Hasher = NewHasher()
	}
	var err error
	if cfg.Strategy == Naive {
		err = o.naive(ctx, morsels)
	} else {
		err = o.radix(ctx, morsels)
	}
	tr.flush()
	o.stats.Accesses = tr.count
	return o.stats, err
}

// observer is a traced run of the generic path.
type observer struct {
	tr       *traceBuf
	cfg      Config
	keyTypes []vec.Type
	specs    []Spec
	stats    *TraceAggStats
	chunks   map[*chunk]*observedChunk
	reused   int64
}

func (o *observer) naive(ctx context.Context, morsels []TraceInput) error {
	o.tr.Phase(0, "aggregate")
	gs, err := newGroupSet(o.keyTypes, o.specs, 0, o.cfg)
	if err != nil {
		return err
	}
	ts := newTracedSet(gs, o.tr, 0)
	for i, m := range morsels {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		hs := ts.hash(o.cfg.Hasher, m.In, m.Keys)
		if err := ts.add(m.In.Keys, m.In.Args, m.Keys, m.Args, hs, ts.hashes.buf, 0, m.In.N); err != nil {
			return err
		}
		o.stats.AggregateRows += int64(m.In.N)
	}
	ts.finalize(o.specs)
	o.stats.Groups, o.stats.TableSlots = gs.table.Len(), gs.table.Slots()
	return nil
}

func (o *observer) radix(ctx context.Context, morsels []TraceInput) error {
	cfg := o.cfg
	threads := max(cfg.Threads, 1)
	bits := cfg.RadixBits
	if bits < 0 || bits > 16 {
		return fmt.Errorf("radix_bits must be between 0 and 16, got %d", bits)
	}
	nparts := 1 << bits
	rowsHint := cfg.RowsHint
	if threads > 1 {
		rowsHint = rowsHint * 3 / 2 / int64(threads)
	}
	window := cfg.PreAggGroups
	if window == 0 {
		// The real window's size; the trace models the copying
		// window even where the real one is direct.
		window = defaultWindow(o.keyTypes, o.specs)
	}
	preagg := PreAggregates(o.keyTypes, o.specs, cfg)
	worker := func(slot int) int {
		if threads == 1 {
			return 0
		}
		return slot + 1
	}
	o.chunks = map[*chunk]*observedChunk{}
	scats := make([]*tracedScatterer, threads)
	var pres []*tracedPreAgg
	for slot := range scats {
		w := worker(slot)
		o.tr.Phase(w, "partition")
		sc := newScatterer(bits, o.keyTypes, o.specs, rowsHint, nil)
		sc.useBudget(cfg.Budget, 0)
		ts := o.newTracedScatterer(sc, w)
		scats[slot] = ts
		var pa *tracedPreAgg
		if preagg {
			part := partialScatterer(bits, o.keyTypes, o.specs, 0, nil)
			part.useBudget(cfg.Budget, 0)
			p, err := newPreAgg(o.keyTypes, o.specs, window, part, rowsHint, cfg, false)
			if err != nil {
				return err
			}
			p.unfolded, p.reused = sc, o.reused
			pa = &tracedPreAgg{pa: p, ts: newTracedSet(p.gs, o.tr, w), part: o.newTracedScatterer(part, w)}
			pres = append(pres, pa)
		}
		for mi := slot; mi < len(morsels); mi += threads {
			if mi%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			m := morsels[mi]
			o.stats.PartitionRows += int64(m.In.N)
			in, cols := m.In, append(append([]TraceCol(nil), m.Keys...), m.Args...)
			var hs []uint64
			hbuf, hoff := -1, int64(0)
			if pa != nil && !pa.pa.skipping(in.N) {
				var err error
				if in, cols, hs, hoff, err = pa.fold(o, m); err != nil {
					return fmt.Errorf("radix partitions: %w", err)
				}
				if in.N == 0 {
					continue
				}
				hbuf = pa.hashes.buf
			}
			if hs == nil {
				hs = ts.hash(cfg.Hasher, in, cols[:len(in.Keys)])
				hbuf = ts.hashes.buf
			}
			if err := ts.sc.scatterHashed(in, hs); err != nil {
				return fmt.Errorf("radix partitions: %w", err)
			}
			ts.report(o, in, cols, hbuf, hoff)
		}
		if pa != nil {
			if err := pa.flush(o); err != nil {
				return fmt.Errorf("radix partitions: %w", err)
			}
		}
	}
	for _, pa := range pres {
		o.stats.PreAgg.add(pa.pa.stats)
	}

	sizer := newPartSizer(len(o.keyTypes), cfg.GroupsHint, nparts)
	o.stats.PartGroups, o.stats.PartRows = make([]int, nparts), make([]int, nparts)
	nk := len(o.keyTypes)
	for slot := 0; slot < threads; slot++ {
		w := worker(slot)
		o.tr.Phase(w, "aggregate")
		var ts *tracedSet
		for p := slot; p < nparts; p += threads {
			if p%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var n int
			for _, sc := range scats {
				n += sc.sc.parts[p].rows
			}
			for _, pa := range pres {
				n += pa.part.sc.parts[p].rows
			}
			if n == 0 {
				continue
			}
			groups, keyRows, reserve := sizer.predict(n)
			if ts == nil {
				gs, err := newGroupSet(o.keyTypes, o.specs, groups, cfg)
				if err != nil {
					return err
				}
				ts = newTracedSet(gs, o.tr, w)
			} else if err := ts.restart(o.specs, groups, cfg); err != nil {
				return err
			}
			if err := ts.gs.table.Reserve(keyRows, reserve); err != nil {
				return err
			}
			ts.observeKeys()
			for _, sc := range scats {
				for _, c := range sc.sc.parts[p].chunks {
					m, tc := c.n, o.chunks[c]
					if err := ts.add(c.keys, c.args, tc.colsOf(0, nk), tc.colsOf(nk, len(c.cols)), c.hashes, tc.hashes.Buf, tc.hashes.Off, m); err != nil {
						return err
					}
					o.stats.AggregateRows += int64(m)
				}
			}
			for _, pa := range pres {
				for _, c := range pa.part.sc.parts[p].chunks {
					m, tc := c.n, o.chunks[c]
					if err := ts.merge(c.keys, c.args, tc.colsOf(0, nk), tc.colsOf(nk, len(c.cols)), c.hashes, tc.hashes.Buf, tc.hashes.Off, m); err != nil {
						return err
					}
					o.stats.AggregateRows += int64(m)
				}
			}
			ts.finalize(o.specs)
			sizer.record(ts.gs.table)
			g := ts.gs.table.Len()
			o.stats.Groups += g
			o.stats.PartGroups[p], o.stats.PartRows[p] = g, n
			o.stats.TableSlots = max(o.stats.TableSlots, ts.gs.table.Slots())
		}
	}
	return nil
}

// tracedPreAgg is a worker's real preAgg with its window table traced.
type tracedPreAgg struct {
	pa     *preAgg
	ts     *tracedSet
	part   *tracedScatterer
	hashes tracedSlice // pa.hashes
	ghash  tracedSlice // pa.groupHashes
}

// fold is preAgg.fold with its accesses reported: the same batches,
// flushes and pauses, the table's work done by the real groupSet. It also
// returns the rest's columns and the offset of its hashes in hashes.buf.
func (t *tracedPreAgg) fold(o *observer, m TraceInput) (rest Input, restCols []TraceCol, restHashes []uint64, hoff int64, err error) {
	pa, in := t.pa, m.In
	n := in.N
	if cap(pa.hashes) < n {
		pa.hashes = make([]uint64, n)
	}
	hs := pa.hashes[:n]
	pa.hasher.Hash(in.Keys, n, hs)
	if c := int64(cap(pa.hashes)); c > t.hashes.cap {
		t.hashes = tracedSlice{buf: o.tr.Alloc(t.ts.w, c*8, false, true), cap: c}
	}
	reportHash(o.tr, t.ts.w, in.Keys, m.Keys, n, t.hashes.buf)
	keys := make([]*vec.Vector, len(in.Keys))
	args := make([]*vec.Vector, len(in.Args))
	kc := make([]TraceCol, len(in.Keys))
	ac := make([]TraceCol, len(in.Args))
	for off := 0; off < n; off += preAggBatch {
		mm := min(preAggBatch, n-off)
		if pa.gs.table.Len()+mm > pa.limit {
			if err := t.flush(o); err != nil {
				return Input{}, nil, nil, 0, err
			}
			if pa.skip > 0 {
				rest = sliceInput(in, off)
				pa.skipping(rest.N)
				for c, k := range in.Keys {
					restCols = append(restCols, m.Keys[c].from(k, off))
				}
				for j, a := range in.Args {
					restCols = append(restCols, m.Args[j].from(a, off))
				}
				return rest, restCols, hs[off:], int64(off) * 8, nil
			}
		}
		for c, k := range in.Keys {
			keys[c], kc[c] = k.Slice(off, off+mm), m.Keys[c].from(k, off)
		}
		for j, a := range in.Args {
			if a != nil {
				args[j], ac[j] = a.Slice(off, off+mm), m.Args[j].from(a, off)
			} else {
				ac[j] = TraceCol{Buf: -1}
			}
		}
		if err := t.ts.add(keys, args, kc, ac, hs[off:off+mm], t.hashes.buf, int64(off)*8, mm); err != nil {
			return Input{}, nil, nil, 0, err
		}
		w := t.ts.w
		for i, g := range pa.gs.gids[:mm] {
			if int(g) == len(pa.groupHashes) {
				pa.groupHashes = append(pa.groupHashes, hs[off+i])
				o.tr.Access(w, t.hashes.buf, int64(off+i)*8, 8, false)
				t.ghash.appendOne(o.tr, w)
			}
		}
		pa.window += int64(mm)
		pa.stats.Rows += int64(mm)
	}
	return Input{}, nil, nil, 0, nil
}

// flush is preAgg.flush, run for real, with its accesses reported: the
// window's groups and partial states scattered, the table cleared.
func (t *tracedPreAgg) flush(o *observer) error {
	pa, ts := t.pa, t.ts
	groups := pa.gs.table.Len()
	var in Input
	var cols []TraceCol
	if groups > 0 {
		// Copies of the vectors: the flush empties the table's.
		for c, k := range pa.gs.table.Keys() {
			cp := *k
			in.Keys = append(in.Keys, &cp)
			cols = append(cols, ts.keys[c].col())
		}
		for j, st := range pa.gs.states {
			in.Args = append(in.Args, st.partial(groups)...)
			for _, w := range ts.states[j] {
				cols = append(cols, TraceCol{Buf: w.buf})
			}
		}
		in.N = groups
	}
	if err := pa.flush(); err != nil {
		return err
	}
	if groups > 0 {
		t.part.report(o, in, cols, t.ghash.buf, 0)
	}
	t.ghash.len = 0
	ts.reset()
	return nil
}
