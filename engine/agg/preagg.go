package agg

import (
	"fmt"
	"math/bits"
	"unsafe"

	"cachebook/engine/vec"
)

// Pre-aggregation before partitioning. Each radix worker first folds its
// rows into a small hash table of its own, one that stays in the caches;
// when the table is full its groups, with their partial aggregate states,
// are scattered into the partitions and the table starts again empty. A key
// that repeats within a window of rows (runs of one URL in clustered data,
// a popular page in shuffled data) then crosses the partitions once per
// window instead of once per row, so the partitions take less memory and
// the second phase folds fewer rows. DuckDB's radix-partitioned hash
// aggregate works the same way. Where keys seldom repeat within a window
// (one row per user among millions of users) the small table only costs a
// probe per row, so a window that passes on more than half as many groups
// as it took rows turns pre-aggregation off for a stretch of rows that
// doubles each time it is tried again in vain. Measured on 20M generated
// hits rows, one thread: GROUP BY URL in clustered order kept 30% of its
// rows and ran about 15% faster; in shuffled order windows keep about 58%
// and the probe cost as much as the smaller partitions saved, so there
// they are skipped, as long as the partitions go into mappings a previous
// query left in the pool. Fresh memory costs more per byte: each page is
// faulted in and zeroed as it is first written, which on the VM this was
// built on took from 0.05 to 2.9 s per GB (see freshCost). So once a
// worker has written as many partition bytes as the pool kept for it when
// the aggregation started, a window may pass on up to 70% of its rows:
// GROUP BY URL in shuffled order, in a fresh process, then peaks at 1.1
// instead of 1.7 GiB and runs about 15% faster (see PreAggStats.Fresh).

// DefaultPreAggGroups is the number of groups a worker's pre-aggregation
// table holds before it is flushed into the partitions: with URL keys its
// slots, keys and count states take about 2.5 MiB, about a core's L2 on a
// current server.
const DefaultPreAggGroups = 1 << 15

// DefaultDirectGroups bounds the window of a direct window
// (preagg_direct.go), whose keys live in the partitions: a group costs its
// slot, key reference and partial states, about 60 bytes with URL keys and
// count(*), so a window four times as large as a copying one fits in the
// same memory. It starts at DefaultPreAggGroups and doubles after each
// window that passed on more than preAggGrow of its rows: a larger window
// folds more of keys that repeat far apart but costs probes that miss the
// caches, which keys repeating close together (clustered data) do not
// need. On 20M generated hits rows, GROUP BY URL, one thread: shuffled,
// the windows grow and pass on 9.5M partial groups instead of 11.6M, peak
// RSS falls from about 745 to 670 MB; clustered, they stay at 32768.
// A window prefetches the slots its probes start at a few blocks of rows
// ahead (prefetchMinSlots), but not the keys they name.
const DefaultDirectGroups = 1 << 17

const (
	// preAggBatch is the number of rows folded at a time: the table is
	// flushed between batches, when the next could overfill it.
	preAggBatch = 2048
	// preAggPoor is the share of a window's rows, in 1/1000, that its
	// groups may reach before the window counts as not paying for itself.
	preAggPoor = 500
	// preAggPoorFresh is preAggPoor once the partitions are written into
	// freshly mapped memory.
	preAggPoorFresh = 700
	// preAggMaxSkip bounds the back-off, in windows' worth of rows.
	preAggMaxSkip = 256
	// preAggGrow is the share of a window's rows, in 1/1000, that its
	// groups must pass for a growing window to double.
	preAggGrow = 400
)

// decomposable reports whether every aggregate's state can be split into
// partial states that merge: count(*), count, sum, avg, min and max
// without DISTINCT, over an input that has a type of its own.
func decomposable(specs []Spec) bool {
	for _, sp := range specs {
		switch sp.Kind {
		case CountStar:
		case Count, Sum, Avg, Min, Max:
			if sp.Distinct || sp.In == vec.Null {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// PreAggregates reports whether an Aggregator pre-aggregates with cfg: the
// radix strategy on the generic path (not the tuned count loop), every
// aggregate decomposable, and cfg.PreAggGroups not negative.
func PreAggregates(keyTypes []vec.Type, specs []Spec, cfg Config) bool {
	return len(keyTypes) > 0 && cfg.Strategy == Radix && cfg.PreAggGroups >= 0 &&
		(cfg.Generic || !countFast(keyTypes, specs)) && decomposable(specs)
}

// partialTypes returns the columns a spec's partial state travels in: the
// running value or values, then the count of values folded (which, for
// min and max, only says whether there was one).
func partialTypes(sp Spec) []vec.Type {
	switch sp.Kind {
	case Sum, Avg:
		if sp.In.IsFloat() {
			return []vec.Type{vec.Float64, vec.Int64}
		}
		return []vec.Type{vec.Int64, vec.Int64, vec.Int64} // low and high words of the 128-bit sum
	case Min, Max:
		return []vec.Type{sp.In, vec.Int64}
	}
	return []vec.Type{vec.Int64}
}

// partial returns the partial states of groups 0..n-1 as columns of the
// types partialTypes gives. Fixed-width columns share the state's arrays,
// so they are valid until the state changes.
func (s *State) partial(n int) []*vec.Vector {
	cnt := &vec.Vector{Type: vec.Int64, Len: n, I64: s.cnt[:n]}
	switch s.spec.Kind {
	case Sum, Avg:
		if s.spec.In.IsFloat() {
			return []*vec.Vector{{Type: vec.Float64, Len: n, F64: s.f64[:n]}, cnt}
		}
		var lo []int64
		if n > 0 {
			lo = unsafe.Slice((*int64)(unsafe.Pointer(&s.lo[0])), n)
		}
		return []*vec.Vector{{Type: vec.Int64, Len: n, I64: lo}, {Type: vec.Int64, Len: n, I64: s.hi[:n]}, cnt}
	case Min, Max:
		v := &vec.Vector{Type: s.spec.In, Len: n}
		switch {
		case s.spec.In.IsFloat():
			v.F64 = s.f64[:n]
		case s.spec.In == vec.String:
			v = vec.NewVector(vec.String, n)
			for _, b := range s.strs[:n] {
				v.AppendStr(b)
			}
		default:
			v.I64 = s.i64[:n]
		}
		return []*vec.Vector{v, cnt}
	}
	return []*vec.Vector{cnt}
}

// Merge folds n partial states (columns as partial returns them) into the
// groups given by gids.
func (s *State) Merge(gids []uint32, part []*vec.Vector, n int) error {
	gids = gids[:n]
	cnt := s.cnt
	switch s.spec.Kind {
	case CountStar, Count:
		pc := part[0].I64[:n]
		for i, g := range gids {
			cnt[g] += pc[i]
		}
	case Sum, Avg:
		if s.spec.In.IsFloat() {
			ps, pc := part[0].F64[:n], part[1].I64[:n]
			f := s.f64
			for i, g := range gids {
				if pc[i] != 0 {
					f[g] += ps[i]
					cnt[g] += pc[i]
				}
			}
			return nil
		}
		plo, phi, pc := part[0].I64[:n], part[1].I64[:n], part[2].I64[:n]
		lo, hi := s.lo, s.hi
		for i, g := range gids {
			var c uint64
			lo[g], c = bits.Add64(lo[g], uint64(plo[i]), 0)
			hi[g] += phi[i] + int64(c)
			cnt[g] += pc[i]
		}
	case Min, Max:
		// A partial min or max is a value like any other, present where
		// its count is not zero; the count only tells a group that had a
		// value from one that had none, so Update's count of partial
		// values serves as well as the count of rows.
		v, pc := *part[0], part[1].I64[:n]
		v.Valid = make([]bool, n)
		for i, c := range pc {
			v.Valid[i] = c != 0
		}
		return s.Update(gids, &v, n)
	}
	return nil
}

// reset empties the state for reuse, keeping its memory.
func (s *State) reset() {
	s.cnt = s.cnt[:0]
	s.lo, s.hi, s.i64, s.f64 = s.lo[:0], s.hi[:0], s.i64[:0], s.f64[:0]
	for i := range s.strs {
		s.strs[i] = s.strs[i][:0]
	}
	s.strs = s.strs[:0]
}

// reset empties the table for reuse, keeping its slots and key memory.
func (t *Table) reset() {
	clear(t.slots)
	t.n, t.nullGid = 0, -1
	t.pack = t.packInit
	for _, k := range t.keys {
		k.Len, k.Valid = 0, nil
		k.I64, k.F64, k.Bytes = k.I64[:0], k.F64[:0], k.Bytes[:0]
		if k.Offsets != nil {
			k.Offsets = k.Offsets[:1]
		}
	}
}

// preAgg is one radix worker's pre-aggregation: the window table, the
// partitions its flushes go to, and its counts for EXPLAIN.
type preAgg struct {
	gs    *groupSet
	limit int // groups that trigger a flush
	// maxLimit is the most limit may grow to (see DefaultDirectGroups).
	maxLimit int
	part     *scatterer
	// scatter, if set, scatters into part, spilling when it must.
	scatter func(in Input, hs []uint64) error
	hasher  *Hasher
	hashes  []uint64 // the morsel's
	// groupHashes holds the hash of each group of the table, in group id
	// order, recorded as the group is made, so a flush scatters the
	// groups without hashing their keys again.
	groupHashes []uint64
	window      int64 // rows folded since the last flush
	// rowsHint is the rows the worker is expected to see (0: unknown).
	rowsHint int64

	// unfolded holds the rows scattered as they were, while folding
	// pauses; its bytes count toward reused with part's.
	unfolded *scatterer
	// reused is the partition bytes the worker may write into mappings
	// the pool kept when the aggregation started; beyond them, each new
	// block is fresh memory.
	reused int64

	skip  int64 // rows still to be scattered unfolded
	fails int   // windows in a row that gained too little

	// dw, if set, is the window table of a direct window
	// (preagg_direct.go); gs then holds only the states.
	dw *directWindow
	// reserve, if set, is part.reserveHashed, spilling when it must.
	reserve func(keys []*vec.Vector, hs []uint64) error

	stats PreAggStats
}

// PreAggStats counts what pre-aggregation did in one aggregation.
type PreAggStats struct {
	Window  int   // the most groups a worker's table held before it was flushed (0: not used)
	Rows    int64 // rows folded into the tables
	Partial int64 // partial groups the tables passed on to the partitions
	Skipped int64 // rows scattered unfolded while pre-aggregation gained too little
	Flushes int64 // times a table was flushed
	// Fresh counts the windows judged after the partitions had outgrown
	// the memory the pool kept, by the bound for fresh memory
	// (preAggPoorFresh rather than preAggPoor).
	Fresh int64
}

// Describe says what pre-aggregation did, for EXPLAIN ANALYZE, or "" if
// it did not run: the rows folded and the partial groups passed on, the
// rows that skipped folding, and the windows judged by the bound for fresh
// memory, with both bounds.
func (p PreAggStats) Describe() string {
	if p.Window == 0 {
		return ""
	}
	line := fmt.Sprintf("%d rows folded into %d partial groups before partitioning (tables of %d groups per worker, %d flushes)",
		p.Rows, p.Partial, p.Window, p.Flushes)
	if p.Skipped > 0 {
		line += fmt.Sprintf("; %d rows partitioned as they were, where a table folded too few of its rows", p.Skipped)
	}
	if p.Fresh > 0 {
		line += fmt.Sprintf("; %d windows judged after the partitions outgrew the memory kept from earlier queries: fresh memory costs a page fault per page, so a table may pass on up to %d%% of its rows before folding pauses (%d%% otherwise)",
			p.Fresh, preAggPoorFresh/10, preAggPoor/10)
	}
	return line
}

func (p *PreAggStats) add(o PreAggStats) {
	p.Window = max(p.Window, o.Window)
	p.Rows += o.Rows
	p.Partial += o.Partial
	p.Skipped += o.Skipped
	p.Flushes += o.Flushes
	p.Fresh += o.Fresh
}

// newPreAgg returns a worker's pre-aggregation, whose flushes go to part;
// rowsHint is the rows the worker is expected to see (0: unknown). With
// direct (where usesDirect allows it), new groups go straight into part.
func newPreAgg(keyTypes []vec.Type, specs []Spec, limit int, part *scatterer, rowsHint int64, cfg Config, direct bool) (*preAgg, error) {
	start := limit
	if cfg.PreAggGroups == 0 && usesDirect(keyTypes, specs) {
		start = min(limit, DefaultPreAggGroups) // grows up to limit
	}
	hint := start // a small input gets a small table, which grows up to start
	if rowsHint > 0 {
		hint = int(min(int64(start), max(rowsHint, 1024)))
	}
	pa := &preAgg{limit: start, maxLimit: limit, part: part, hasher: cfg.Hasher, rowsHint: rowsHint, stats: PreAggStats{Window: start}}
	if direct && usesDirect(keyTypes, specs) {
		dw, err := newDirectWindow(hint, cfg.Budget)
		if err != nil {
			return nil, err
		}
		pa.dw, pa.gs = dw, &groupSet{}
		part.rehash = cfg.Hasher
		return pa, pa.gs.newStates(specs, cfg)
	}
	gs, err := newGroupSet(keyTypes, specs, hint, cfg)
	if err != nil {
		return nil, err
	}
	pa.gs = gs
	return pa, nil
}

// partialScatterer returns the partitions for the partial groups of keys
// of keyTypes and aggregates specs.
func partialScatterer(bits int, keyTypes []vec.Type, specs []Spec, rowsHint int64, arena *Arena) *scatterer {
	cols := append([]vec.Type(nil), keyTypes...)
	for _, sp := range specs {
		cols = append(cols, partialTypes(sp)...)
	}
	used := make([]bool, len(cols))
	for i := range used {
		used[i] = true
	}
	return newScatterCols(bits, len(keyTypes), cols, used, rowsHint, arena)
}

// skipping reports whether the next n rows are to be scattered unfolded,
// and counts them if so.
func (pa *preAgg) skipping(n int) bool {
	if pa.skip <= 0 {
		return false
	}
	pa.skip -= int64(n)
	pa.stats.Skipped += int64(n)
	return true
}

// fold folds a morsel into the window table, flushing it whenever the next
// batch could overfill it. It returns the rows it did not fold (rest.N is
// 0 when it folded them all), with their hashes: after a flush that turned
// folding off, the rest of the morsel is the caller's to scatter as it is.
func (pa *preAgg) fold(in Input) (rest Input, restHashes []uint64, err error) {
	n := in.N
	if cap(pa.hashes) < n {
		pa.hashes = make([]uint64, n)
	}
	hs := pa.hashes[:n]
	pa.hasher.Hash(in.Keys, n, hs)
	keys := make([]*vec.Vector, len(in.Keys))
	args := make([]*vec.Vector, len(in.Args))
	for off := 0; off < n; off += preAggBatch {
		m := min(preAggBatch, n-off)
		if pa.groups()+m > pa.limit {
			if err := pa.flush(); err != nil {
				return Input{}, nil, err
			}
			if pa.skip > 0 {
				rest = sliceInput(in, off)
				pa.skipping(rest.N)
				return rest, hs[off:], nil
			}
		}
		for c, k := range in.Keys {
			keys[c] = k.Slice(off, off+m)
		}
		for j, a := range in.Args {
			if a != nil {
				args[j] = a.Slice(off, off+m)
			}
		}
		add := pa.addCopying
		if pa.dw != nil {
			add = pa.addDirect
		}
		if err := add(keys, args, hs[off:off+m], m); err != nil {
			return Input{}, nil, err
		}
		pa.window += int64(m)
		pa.stats.Rows += int64(m)
	}
	return Input{}, nil, nil
}

// addCopying folds a batch of m rows, whose hashes are hs, into a copying
// window.
func (pa *preAgg) addCopying(keys, args []*vec.Vector, hs []uint64, m int) error {
	if err := pa.gs.add(keys, args, hs, m); err != nil {
		return err
	}
	// Group ids are handed out in order: a row whose id is the next one
	// made its group.
	for i, g := range pa.gs.gids[:m] {
		if int(g) == len(pa.groupHashes) {
			pa.groupHashes = append(pa.groupHashes, hs[i])
		}
	}
	return nil
}

// sliceInput returns rows off.. of in.
func sliceInput(in Input, off int) Input {
	out := Input{N: in.N - off, Keys: make([]*vec.Vector, len(in.Keys)), Args: make([]*vec.Vector, len(in.Args))}
	for c, k := range in.Keys {
		out.Keys[c] = k.Slice(off, in.N)
	}
	for j, a := range in.Args {
		if a != nil {
			out.Args[j] = a.Slice(off, in.N)
		}
	}
	return out
}

// flush scatters the window table's groups, with their partial states,
// into the partitions and empties the table. A window whose groups were
// most of its rows turns folding off for a while.
func (pa *preAgg) flush() error {
	gs := pa.gs
	groups := pa.groups()
	poor := pa.poor(groups)
	if !poor && pa.window > 0 && pa.stats.Rows > 0 && pa.rowsHint > 0 {
		// The partitions start small; after each window that paid, a
		// partition's next chunk has room for the rest of its share of
		// the partial groups, as the windows so far fold the rows. The
		// first window, the smallest, folds the least: a share judged
		// by it alone overshot by a third, all of it charged.
		share := pa.rowsHint * (pa.stats.Partial + int64(groups)) / pa.stats.Rows >> (64 - pa.part.shift)
		pa.part.expect, pa.part.judged = int(share)*9/8+64, true
	}
	if groups > 0 && pa.dw != nil {
		pa.flushDirect(groups)
		pa.stats.Partial += int64(groups)
		pa.stats.Flushes++
	} else if groups > 0 {
		in := Input{Keys: gs.table.Keys(), N: groups}
		for _, st := range gs.states {
			in.Args = append(in.Args, st.partial(groups)...)
		}
		scatter := pa.part.scatterHashed
		if pa.scatter != nil {
			scatter = pa.scatter
		}
		if err := scatter(in, pa.groupHashes[:groups]); err != nil {
			return err
		}
		pa.stats.Partial += int64(groups)
		pa.stats.Flushes++
	}
	if !poor && pa.limit < pa.maxLimit && int64(groups)*1000 > pa.window*preAggGrow {
		pa.limit = min(pa.limit*2, pa.maxLimit)
		pa.stats.Window = max(pa.stats.Window, pa.limit)
	}
	if poor {
		pa.fails++
		pa.skip = pa.window * int64(min(1<<min(pa.fails, 8), preAggMaxSkip))
	} else {
		pa.fails = 0
	}
	pa.window = 0
	pa.groupHashes = pa.groupHashes[:0]
	if pa.dw != nil {
		pa.dw.reset()
	} else {
		gs.table.reset()
	}
	for _, st := range gs.states {
		st.reset()
	}
	return nil
}

// groups returns the groups in the window table.
func (pa *preAgg) groups() int {
	if pa.dw != nil {
		return pa.dw.n
	}
	return pa.gs.table.Len()
}

// poor reports whether the window, whose table holds groups groups, did
// not pay for itself: its groups passed preAggPoor of its rows, or
// preAggPoorFresh once the partitions take fresh memory. An empty window
// is not poor.
func (pa *preAgg) poor(groups int) bool {
	if pa.window == 0 {
		return false
	}
	bound := int64(preAggPoor)
	if pa.fresh() {
		bound = preAggPoorFresh
		pa.stats.Fresh++
	}
	return int64(groups)*1000 > pa.window*bound
}

// fresh reports whether the worker's partitions have outgrown the memory
// the pool kept for them, so that what they take next is freshly mapped.
func (pa *preAgg) fresh() bool {
	written := pa.part.written
	if pa.unfolded != nil {
		written += pa.unfolded.written
	}
	return written >= pa.reused
}

// release returns the window table's memory to the budget.
func (pa *preAgg) release(b *Budget) {
	if pa.dw != nil {
		b.Grow(-pa.dw.charged)
		pa.dw.charged = 0
	} else {
		t := pa.gs.table
		b.Grow(-int64(t.Slots())*16 - t.KeyBytes())
	}
	for _, st := range pa.gs.states {
		b.Grow(-st.charged)
	}
}
