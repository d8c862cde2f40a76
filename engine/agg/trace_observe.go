package agg

import (
	"context"
	"fmt"
	"math"
	"unsafe"

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
		window = DefaultPreAggGroups
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
		sc.slab.budget = cfg.Budget
		ts := o.newTracedScatterer(sc, w)
		scats[slot] = ts
		var pa *tracedPreAgg
		if preagg {
			part := partialScatterer(bits, o.keyTypes, o.specs, 0, nil)
			part.slab.budget = cfg.Budget
			p, err := newPreAgg(o.keyTypes, o.specs, window, part, rowsHint, cfg)
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
					m, tc := len(c.hashes), o.chunks[c]
					if err := ts.add(c.keys, c.args, tc.colsOf(0, nk), tc.colsOf(nk, len(c.cols)), c.hashes, tc.hashes.Buf, tc.hashes.Off, m); err != nil {
						return err
					}
					o.stats.AggregateRows += int64(m)
				}
			}
			for _, pa := range pres {
				for _, c := range pa.part.sc.parts[p].chunks {
					m, tc := len(c.hashes), o.chunks[c]
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

// tracedSet is a real groupSet whose accesses are reported.
type tracedSet struct {
	gs        *groupSet
	tr        *traceBuf
	w         int
	slots     int // buffer of the table's slots
	slotsData unsafe.Pointer
	keys      []tracedKey
	states    [][]tracedSlice // per spec, per word (State.Resize's arrays)
	hashes    tracedSlice     // groupSet.hashes
	gids      tracedSlice     // groupSet.gids (4-byte entries, counted as 8)
}

// tracedKey is a table's stored key column: its fixed-width values or
// string offsets (offs), and its string bytes (data).
type tracedKey struct {
	str        bool
	data, offs tracedSlice
	dataPtr    unsafe.Pointer
	offsPtr    unsafe.Pointer
}

func newTracedKeys(n int) []tracedKey {
	ks := make([]tracedKey, n)
	for i := range ks {
		ks[i].data.buf, ks[i].offs.buf = -1, -1
	}
	return ks
}

func (k *tracedKey) col() TraceCol {
	if k.str {
		return TraceCol{Buf: k.data.buf, OffBuf: k.offs.buf}
	}
	return TraceCol{Buf: k.data.buf}
}

func newTracedSet(gs *groupSet, tr *traceBuf, w int) *tracedSet {
	ts := &tracedSet{gs: gs, tr: tr, w: w, hashes: tracedSlice{buf: -1}, gids: tracedSlice{buf: -1}}
	ts.slots = tr.Alloc(w, int64(len(gs.table.slots))*16, false, true)
	ts.slotsData = unsafe.Pointer(unsafe.SliceData(gs.table.slots))
	ts.keys = newTracedKeys(len(gs.table.keys))
	ts.resetStates()
	ts.observeKeys()
	return ts
}

func (ts *tracedSet) resetStates() {
	ts.states = ts.states[:0]
	for _, st := range ts.gs.states {
		ts.states = append(ts.states, make([]tracedSlice, stateWords(st.spec)))
	}
}

// observeKeys follows the stored key columns' arrays: one that moved was
// grown (allocated and its contents copied) or replaced by an empty one.
func (ts *tracedSet) observeKeys() {
	for c, k := range ts.gs.table.keys {
		tk := &ts.keys[c]
		if k.Type == vec.String {
			tk.str = true
			observeArray(ts.tr, ts.w, &tk.offs, &tk.offsPtr, unsafe.Pointer(unsafe.SliceData(k.Offsets)), int64(cap(k.Offsets)), 4)
			observeArray(ts.tr, ts.w, &tk.data, &tk.dataPtr, unsafe.Pointer(unsafe.SliceData(k.Bytes)), int64(cap(k.Bytes)), 1)
			continue
		}
		p, c := unsafe.Pointer(unsafe.SliceData(k.I64)), cap(k.I64)
		if k.Type.IsFloat() {
			p, c = unsafe.Pointer(unsafe.SliceData(k.F64)), cap(k.F64)
		}
		observeArray(ts.tr, ts.w, &tk.data, &tk.dataPtr, p, int64(c), 8)
	}
}

// observeArray reports a move of the array s follows (now at p, of
// capacity c elements of elem bytes): a new buffer, with the len
// elements it held copied over.
func observeArray(tr *traceBuf, w int, s *tracedSlice, at *unsafe.Pointer, p unsafe.Pointer, c, elem int64) {
	if p == *at && s.buf >= 0 {
		return
	}
	*at = p
	nb := tr.Alloc(w, max(c, 1)*elem, false, true)
	if s.len > 0 && s.buf >= 0 && p != nil {
		tr.Range(w, s.buf, 0, s.len*elem, false)
		tr.Range(w, nb, 0, s.len*elem, true)
	}
	s.buf, s.cap = nb, c
	if p == nil {
		s.len = 0
	}
}

// reserve makes the hash and group-id scratch hold n rows.
func (ts *tracedSet) reserve(n int) {
	if ts.hashes.buf < 0 || ts.hashes.cap < int64(n) {
		ts.hashes = tracedSlice{buf: ts.tr.Alloc(ts.w, int64(n)*8, false, true), cap: int64(n)}
	}
	if ts.gids.buf < 0 || ts.gids.cap < int64(n) {
		ts.gids = tracedSlice{buf: ts.tr.Alloc(ts.w, int64(n)*4, false, true), cap: int64(n)}
	}
}

// hash is Hasher.Hash into the set's hash scratch, reported.
func (ts *tracedSet) hash(h *Hasher, in Input, cols []TraceCol) []uint64 {
	ts.reserve(in.N)
	if cap(ts.gs.hashes) < in.N {
		ts.gs.hashes = make([]uint64, in.N)
	}
	hs := ts.gs.hashes[:in.N]
	h.Hash(in.Keys, in.N, hs)
	reportHash(ts.tr, ts.w, in.Keys, cols, in.N, ts.hashes.buf)
	return hs
}

// reportHash reports Hasher.Hash of n rows of keys (read from cols) into
// buffer out: column by column, each row's key read, its hash written
// (read first, from the second column on).
func reportHash(tr *traceBuf, w int, keys []*vec.Vector, cols []TraceCol, n, out int) {
	for c, k := range keys {
		for i := 0; i < n; i++ {
			readValue(tr, w, k, cols[c], i)
			if c > 0 {
				tr.Access(w, out, int64(i)*8, 8, false)
			}
			tr.Access(w, out, int64(i)*8, 8, true)
		}
	}
}

// readValue reports the read of value i of v, read from col.
func readValue(tr *traceBuf, w int, v *vec.Vector, col TraceCol, i int) {
	if col.Buf < 0 {
		return
	}
	if v.Type != vec.String {
		tr.Access(w, col.Buf, col.Off+int64(i)*8, 8, false)
		return
	}
	tr.Access(w, col.OffBuf, col.OffOff+int64(i)*4, 8, false)
	if l := int64(v.Offsets[i+1] - v.Offsets[i]); l > 0 && !v.IsNull(i) {
		tr.Range(w, col.Buf, col.Off+int64(v.Offsets[i]), l, false)
	}
}

// add is groupSet.add for n rows whose hashes hs were read from hbuf at
// hoff, reported.
func (ts *tracedSet) add(keys, args []*vec.Vector, kcols, acols []TraceCol, hs []uint64, hbuf int, hoff int64, n int) error {
	gids, err := ts.group(keys, kcols, hs, hbuf, hoff, n)
	if err != nil {
		return err
	}
	for j, st := range ts.gs.states {
		if err := st.Update(gids, args[j], n); err != nil {
			return err
		}
		var col TraceCol
		if j < len(acols) && args[j] != nil {
			col = acols[j]
		} else {
			col.Buf = -1
		}
		ts.reportState(j, gids, []TraceCol{col}, n)
	}
	return nil
}

// merge is groupSet.merge, reported; partial holds every aggregate's
// partial columns in turn, read from pcols.
func (ts *tracedSet) merge(keys, partial []*vec.Vector, kcols, pcols []TraceCol, hs []uint64, hbuf int, hoff int64, n int) error {
	gids, err := ts.group(keys, kcols, hs, hbuf, hoff, n)
	if err != nil {
		return err
	}
	for j, st := range ts.gs.states {
		k := len(partialTypes(st.spec))
		if err := st.Merge(gids, partial[:k], n); err != nil {
			return err
		}
		ts.reportState(j, gids, pcols[:k], n)
		partial, pcols = partial[k:], pcols[k:]
	}
	return nil
}

// reportState reports state j's update of n rows: per row its group id
// and inputs read, then each of its words read and written.
func (ts *tracedSet) reportState(j int, gids []uint32, cols []TraceCol, n int) {
	tr, w := ts.tr, ts.w
	words := ts.states[j]
	for i, g := range gids[:n] {
		tr.Access(w, ts.gids.buf, int64(i)*4, 4, false)
		for _, c := range cols {
			if c.Buf >= 0 {
				tr.Access(w, c.Buf, c.Off+int64(i)*8, 8, false)
			}
		}
		for x := range words {
			tr.Access(w, words[x].buf, int64(g)*8, 8, false)
			tr.Access(w, words[x].buf, int64(g)*8, 8, true)
		}
	}
}

// group is groupSet.group, reported. The table groups the rows in pieces
// that cannot grow it midway (at most as many rows as it has room for
// groups, or one row when it is full), so that each piece's probes can be
// read back from the slots it leaves.
func (ts *tracedSet) group(keys []*vec.Vector, kcols []TraceCol, hs []uint64, hbuf int, hoff int64, n int) ([]uint32, error) {
	gs, t := ts.gs, ts.gs.table
	if cap(gs.gids) < n {
		gs.gids = make([]uint32, n)
	}
	gids := gs.gids[:n]
	ts.reserve(n)
	sub := make([]*vec.Vector, len(keys))
	for lo := 0; lo < n; {
		m := n - lo
		if room := t.growAt - t.n; room < m {
			m = max(room, 1)
		}
		for c, k := range keys {
			sub[c] = k
			if lo > 0 || m < n {
				sub[c] = k.Slice(lo, lo+m)
			}
		}
		old, n0 := t.slots, t.n
		if err := t.Group(sub, hs[lo:lo+m], m, gids[lo:lo+m]); err != nil {
			return nil, err
		}
		if unsafe.SliceData(t.slots) != unsafe.SliceData(old) {
			ts.reportGrow(old)
		}
		ts.reportGroup(keys, kcols, hs, hbuf, hoff, gids, lo, lo+m, n0)
		lo += m
	}
	for _, st := range gs.states {
		if err := st.Resize(t.Len()); err != nil {
			return nil, err
		}
	}
	ts.observeStates()
	return gids, nil
}

// reportGrow reports Table.grow from the slots old: each old slot read,
// each group's walk to its new slot and the write there.
func (ts *tracedSet) reportGrow(old []slot) {
	t, tr, w := ts.gs.table, ts.tr, ts.w
	oldBuf := ts.slots
	ts.slots = tr.Alloc(w, int64(len(t.slots))*16, false, true)
	ts.slotsData = unsafe.Pointer(unsafe.SliceData(t.slots))
	for i, s := range old {
		tr.Access(w, oldBuf, int64(i)*16, 16, false)
		if s.gid == 0 {
			continue
		}
		h := s.word
		if t.intKey {
			h = Mix64(s.word)
		}
		j := h & t.mask
		for {
			tr.Access(w, ts.slots, int64(j)*16+8, 4, false)
			if t.slots[j].gid == s.gid {
				break
			}
			j = (j + 1) & t.mask
		}
		tr.Access(w, ts.slots, int64(j)*16, 16, true)
	}
}

// reportGroup reports the probes of rows lo..hi-1, grouped by a call of
// Table.Group that found the table with n0 groups and did not grow it.
func (ts *tracedSet) reportGroup(keys []*vec.Vector, kcols []TraceCol, hs []uint64, hbuf int, hoff int64, gids []uint32, lo, hi, n0 int) {
	t, tr, w := ts.gs.table, ts.tr, ts.w
	ts.observeKeys() // key columns that grew for the new groups
	next := uint32(n0)
	for i := lo; i < hi; i++ {
		g := gids[i]
		made := g == next
		if made {
			next++
		}
		tr.Access(w, hbuf, hoff+int64(i)*8, 8, false)
		if t.intKey {
			readValue(tr, w, keys[0], kcols[0], i)
			if keys[0].IsNull(i) {
				if made {
					ts.reportKeyAppend(keys, kcols, i, int(g))
				}
				tr.Access(w, ts.gids.buf, int64(i)*4, 4, true)
				continue
			}
		}
		j := hs[i] & t.mask
		for {
			off := int64(j) * 16
			tr.Access(w, ts.slots, off+8, 4, false)
			s := t.slots[j]
			if s.gid == g+1 {
				if made {
					tr.Access(w, ts.slots, off, 16, true)
					ts.reportKeyAppend(keys, kcols, i, int(g))
				} else {
					tr.Access(w, ts.slots, off, 8, false)
					if !t.intKey {
						ts.reportCompare(keys, kcols, i, int(g))
					}
				}
				break
			}
			tr.Access(w, ts.slots, off, 8, false)
			if !t.intKey && s.word == hs[i] {
				ts.reportCompare(keys, kcols, i, int(s.gid-1))
			}
			j = (j + 1) & t.mask
		}
		tr.Access(w, ts.gids.buf, int64(i)*4, 4, true)
	}
}

// reportKeyAppend reports the append of row i's keys as group g's.
func (ts *tracedSet) reportKeyAppend(keys []*vec.Vector, kcols []TraceCol, i, g int) {
	tr, w := ts.tr, ts.w
	for c, k := range keys {
		tk := &ts.keys[c]
		readValue(tr, w, k, kcols[c], i)
		stored := ts.gs.table.keys[c]
		if !tk.str {
			tr.Access(w, tk.data.buf, int64(g)*8, 8, true)
			tk.data.len = max(tk.data.len, int64(g)+1)
			continue
		}
		tr.Access(w, tk.offs.buf, int64(g+1)*4, 4, true)
		if l := int64(stored.Offsets[g+1] - stored.Offsets[g]); l > 0 {
			tr.Range(w, tk.data.buf, int64(stored.Offsets[g]), l, true)
		}
		tk.offs.len = max(tk.offs.len, int64(g)+2)
		tk.data.len = max(tk.data.len, int64(stored.Offsets[g+1]))
	}
}

// reportCompare reports Table.equal of row i with group g: column by
// column, both values read, up to the first that differs.
func (ts *tracedSet) reportCompare(keys []*vec.Vector, kcols []TraceCol, i, g int) {
	tr, w := ts.tr, ts.w
	for c, k := range keys {
		s := ts.gs.table.keys[c]
		readValue(tr, w, k, kcols[c], i)
		readValue(tr, w, s, ts.keys[c].col(), g)
		if !equalKey(k, i, s, g) {
			return
		}
	}
}

// equalKey is Table.equal for one column: value i of k against value g
// of stored.
func equalKey(k *vec.Vector, i int, stored *vec.Vector, g int) bool {
	rn, sn := k.IsNull(i), stored.IsNull(g)
	if rn || sn {
		return rn == sn
	}
	switch k.Type {
	case vec.String:
		return string(k.Str(i)) == string(stored.Str(g))
	case vec.Float64, vec.Float32:
		return floatBits(k.F64[i]) == floatBits(stored.F64[g])
	}
	return k.I64[i] == stored.I64[g]
}

// observeStates follows the states' arrays after Resize: each that moved
// was copied into a new one; new groups' entries are zeroed.
func (ts *tracedSet) observeStates() {
	for j, st := range ts.gs.states {
		words := ts.states[j]
		n, c := int64(len(st.cnt)), int64(cap(st.cnt))
		for x := range words {
			words[x].extendTo(ts.tr, ts.w, n, c)
		}
	}
}

// finalize is groupSet.finalize, reported: each state's arrays copied
// out.
func (ts *tracedSet) finalize(specs []Spec) {
	for j := range ts.gs.states {
		for _, w := range ts.states[j] {
			out := ts.tr.Alloc(ts.w, max(w.len, 1)*8, false, true)
			ts.tr.Range(ts.w, w.buf, 0, w.len*8, false)
			ts.tr.Range(ts.w, out, 0, w.len*8, true)
		}
	}
	if _, err := ts.gs.finalize(); err != nil {
		panic(err) // finalize fails only for count(DISTINCT), which is not traced
	}
}

// reset is what preAgg.flush does to the window table, reported: its
// slots cleared, its keys and states emptied in place.
func (ts *tracedSet) reset() {
	ts.tr.Range(ts.w, ts.slots, 0, int64(len(ts.gs.table.slots))*16, true)
	for c := range ts.keys {
		ts.keys[c].data.len, ts.keys[c].offs.len = 0, 0
	}
	for _, words := range ts.states {
		for x := range words {
			words[x].len = 0
		}
	}
}

// restart is groupSet.restart, reported: slots kept are cleared, a larger
// table is fresh; keys and states start again empty.
func (ts *tracedSet) restart(specs []Spec, hint int, cfg Config) error {
	if err := ts.gs.restart(specs, hint, cfg); err != nil {
		return err
	}
	t := ts.gs.table
	if p := unsafe.Pointer(unsafe.SliceData(t.slots)); p != ts.slotsData {
		ts.slots, ts.slotsData = ts.tr.Alloc(ts.w, int64(len(t.slots))*16, false, true), p
	} else {
		ts.tr.Range(ts.w, ts.slots, 0, int64(len(t.slots))*16, true)
	}
	ts.keys = newTracedKeys(len(t.keys))
	ts.resetStates()
	ts.observeKeys()
	return nil
}

// tracedScatterer is a real scatterer whose accesses are reported.
type tracedScatterer struct {
	sc                      *scatterer
	tr                      *traceBuf
	w                       int
	count, cur, parts, need int // buffers: per-partition counts, current chunks, headers, string bytes
	hashes, pidx            tracedSlice
	start                   []int
	blocks                  []tracedBlock // the slab's blocks seen, in order
}

func (o *observer) newTracedScatterer(sc *scatterer, w int) *tracedScatterer {
	np := int64(len(sc.parts))
	return &tracedScatterer{sc: sc, tr: o.tr, w: w,
		count: o.tr.Alloc(w, np*4, false, true), cur: o.tr.Alloc(w, np*8, false, true),
		parts: o.tr.Alloc(w, np*(sliceHeader+8), false, true), need: o.tr.Alloc(w, np*8, false, true),
		hashes: tracedSlice{buf: -1}, pidx: tracedSlice{buf: -1}, start: make([]int, np)}
}

// hash is scatterer.scatter's hashing, reported.
func (ts *tracedScatterer) hash(h *Hasher, in Input, cols []TraceCol) []uint64 {
	sc := ts.sc
	if cap(sc.hashes) < in.N {
		sc.hashes = make([]uint64, in.N)
	}
	hs := sc.hashes[:in.N]
	h.Hash(in.Keys, in.N, hs)
	if ts.hashes.buf < 0 || ts.hashes.cap < int64(in.N) {
		ts.hashes = tracedSlice{buf: ts.tr.Alloc(ts.w, int64(in.N)*8, false, true), cap: int64(in.N)}
	}
	reportHash(ts.tr, ts.w, in.Keys, cols, in.N, ts.hashes.buf)
	return hs
}

// observedChunk is where a chunk's hashes and each column's data (and a
// string column's offsets) lie: in the slab blocks they were carved from.
type observedChunk struct {
	self, colArr int // the chunk struct and its cols array
	hashes       TraceCol
	cols         []TraceCol // per column; Buf -1 if unused
	vecs         []int      // per column: its vec.Vector struct; -1 if unused
}

// colsOf returns columns lo..hi-1 of the chunk as trace columns.
func (tc *observedChunk) colsOf(lo, hi int) []TraceCol { return tc.cols[lo:hi] }

// report reports scatterHashed of in (columns read from cols), hashes
// read from hbuf at hoff, after the call: per row its partition and
// count, per string column the bytes each partition needs, per partition
// its chunk (a new one allocated), then the hashes and each column
// appended to the rows' chunks (with the loads of the row's chunk and
// vector structs on the way).
func (ts *tracedScatterer) report(o *observer, in Input, cols []TraceCol, hbuf int, hoff int64) {
	tr, w, sc := o.tr, ts.w, ts.sc
	n := in.N
	if ts.pidx.buf < 0 || ts.pidx.cap < int64(n) {
		ts.pidx = tracedSlice{buf: tr.Alloc(w, int64(n)*4, false, true), cap: int64(n)}
	}
	pidx := sc.pidx[:n]
	for i, p := range pidx {
		tr.Access(w, hbuf, hoff+int64(i)*8, 8, false)
		tr.Access(w, ts.pidx.buf, int64(i)*4, 4, true)
		tr.Access(w, ts.count, int64(p)*4, 4, false)
		tr.Access(w, ts.count, int64(p)*4, 4, true)
	}
	all := append(append([]*vec.Vector(nil), in.Keys...), in.Args...)
	for c, v := range all {
		if v == nil || sc.strCol[c] < 0 {
			continue
		}
		for i, p := range pidx {
			tr.Access(w, cols[c].OffBuf, cols[c].OffOff+int64(i)*4, 8, false)
			tr.Access(w, ts.pidx.buf, int64(i)*4, 4, false)
			tr.Access(w, ts.need, int64(p)*8, 8, false)
			tr.Access(w, ts.need, int64(p)*8, 8, true)
		}
	}
	k := make([]int, len(sc.parts))
	for _, p := range pidx {
		k[p]++
	}
	for p := range sc.parts {
		tr.Access(w, ts.count, int64(p)*4, 4, false)
		if k[p] == 0 {
			continue
		}
		tr.Access(w, ts.cur, int64(p)*8, 8, false)
		c := sc.cur[p]
		if o.chunks[c] == nil {
			ts.noteBlock()
			o.chunks[c] = ts.newObservedChunk(c)
		}
		ts.start[p] = len(c.hashes) - k[p]
		tr.Access(w, ts.parts, int64(p)*(sliceHeader+8), 8, true)
		tr.Access(w, ts.count, int64(p)*4, 4, true)
	}
	pos := append([]int(nil), ts.start...)
	for i, p := range pidx {
		tc := o.chunks[sc.cur[p]]
		tr.Access(w, hbuf, hoff+int64(i)*8, 8, false)
		tr.Access(w, ts.pidx.buf, int64(i)*4, 4, false)
		tr.Access(w, ts.cur, int64(p)*8, 8, false)
		tr.Access(w, tc.self, 0, sliceHeader, false)
		tr.Access(w, tc.hashes.Buf, tc.hashes.Off+int64(pos[p])*8, 8, true)
		tr.Access(w, tc.self, 8, 8, true)
		pos[p]++
	}
	for c, v := range all {
		if v == nil || !sc.colUsed[c] {
			continue
		}
		copy(pos, ts.start)
		for i, p := range pidx {
			ch := sc.cur[p]
			tc := o.chunks[ch]
			tr.Access(w, ts.pidx.buf, int64(i)*4, 4, false)
			tr.Access(w, ts.cur, int64(p)*8, 8, false)
			tr.Access(w, tc.self, sliceHeader, sliceHeader, false)
			tr.Access(w, tc.colArr, int64(c)*8, 8, false)
			tr.Access(w, tc.vecs[c], 0, vectorStructBytes/2, false)
			readValue(tr, w, v, cols[c], i)
			if v.Type == vec.String {
				d := ch.cols[c]
				dc := tc.cols[c]
				if l := int64(v.Offsets[i+1] - v.Offsets[i]); l > 0 {
					tr.Range(w, dc.Buf, dc.Off+int64(d.Offsets[pos[p]]), l, true)
				}
				tr.Access(w, dc.OffBuf, dc.OffOff+int64(pos[p]+1)*4, 4, true)
			} else {
				tr.Access(w, tc.cols[c].Buf, tc.cols[c].Off+int64(pos[p])*8, 8, true)
			}
			tr.Access(w, tc.vecs[c], 0, 32, true)
			pos[p]++
		}
	}
}

// newObservedChunk returns the trace buffers of chunk c, whose arrays lie
// in ts's slab blocks.
func (ts *tracedScatterer) newObservedChunk(c *chunk) *observedChunk {
	tr, w := ts.tr, ts.w
	tc := &observedChunk{self: tr.Alloc(w, chunkStructBytes, false, true), colArr: tr.Alloc(w, int64(len(c.cols))*8, false, true)}
	tc.hashes.Buf, tc.hashes.Off = ts.at(unsafe.Pointer(unsafe.SliceData(c.hashes)), int64(cap(c.hashes))*8)
	for _, col := range c.cols {
		tcol, v := TraceCol{Buf: -1}, -1
		if col != nil {
			v = tr.Alloc(w, vectorStructBytes, false, true)
			switch {
			case col.Type == vec.String:
				tcol.OffBuf, tcol.OffOff = ts.at(unsafe.Pointer(unsafe.SliceData(col.Offsets)), int64(cap(col.Offsets))*4)
				tcol.Buf, tcol.Off = ts.at(unsafe.Pointer(unsafe.SliceData(col.Bytes)), int64(cap(col.Bytes)))
			case col.Type.IsFloat():
				tcol.Buf, tcol.Off = ts.at(unsafe.Pointer(unsafe.SliceData(col.F64)), int64(cap(col.F64))*8)
			default:
				tcol.Buf, tcol.Off = ts.at(unsafe.Pointer(unsafe.SliceData(col.I64)), int64(cap(col.I64))*8)
			}
		}
		tc.cols, tc.vecs = append(tc.cols, tcol), append(tc.vecs, v)
	}
	return tc
}

// Sizes of the structs a chunk's appends read and write: a chunk (three
// slice headers: hashes, cols, keys/args) and a vec.Vector (type, length,
// four slice headers).
const (
	chunkStructBytes  = 4 * sliceHeader
	vectorStructBytes = 16 + 5*sliceHeader
)

// tracedBlock is a slab block of a traced scatterer and its trace buffer.
type tracedBlock struct {
	base, end uintptr
	buf       int
}

// noteBlock records the slab's current block, if new.
func (ts *tracedScatterer) noteBlock() {
	b := ts.sc.slab.block
	if len(b) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if k := len(ts.blocks); k > 0 && ts.blocks[k-1].base == base {
		return
	}
	ts.blocks = append(ts.blocks, tracedBlock{base: base, end: base + uintptr(len(b)), buf: ts.tr.Alloc(ts.w, int64(len(b)), false, false)})
}

// at returns the trace buffer and offset of an array of n bytes at p,
// carved from one of the slab's blocks; an array in a block the pass did
// not see (a scatter opened several) gets a buffer of its own.
func (ts *tracedScatterer) at(p unsafe.Pointer, n int64) (buf int, off int64) {
	a := uintptr(p)
	for i := len(ts.blocks) - 1; i >= 0 && i >= len(ts.blocks)-4; i-- {
		if b := ts.blocks[i]; a >= b.base && a < b.end {
			return b.buf, int64(a - b.base)
		}
	}
	return ts.tr.Alloc(ts.w, max(n, 1), false, false), 0
}
