package agg

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"cachebook/engine/vec"
)

// The tuned count(*) loop's aggregators (see intcount.go): countNaive in
// one table, countRadix over radix partitions.

// countPart returns the part of the groups keys and counts (columns of
// Int64 the table emitted) for keys of keyType and nspecs count(*)
// aggregates, with a NULL group of nulls rows appended if there is one.
func countPart(keyType vec.Type, keys, counts *vec.Vector, nulls int64, nspecs int) Part {
	keys.Type = keyType
	if nulls > 0 {
		keys.AppendNull()
		counts.AppendInt(nulls)
	}
	p := Part{Keys: []*vec.Vector{keys}, Groups: keys.Len}
	for j := 0; j < nspecs; j++ {
		c := counts
		if j > 0 {
			c = &vec.Vector{Type: vec.Int64, Len: counts.Len, I64: append([]int64(nil), counts.I64...)}
		}
		p.Aggs = append(p.Aggs, c)
	}
	return p
}

// emitPart takes t's groups out as a part of their own, with a NULL group
// of nulls rows, and charges it to b.
func (t *countTable) emitPart(keyType vec.Type, nulls int64, nspecs int, b *Budget) (Part, error) {
	// emit asks for room for one slot more.
	keys, counts := vec.NewVector(vec.Int64, t.n+1), vec.NewVector(vec.Int64, t.n+1)
	t.emit(keys, counts)
	p := countPart(keyType, keys, counts, nulls, nspecs)
	return p, p.charge(b, 0)
}

// release gives the table's slots back.
func (t *countTable) release() {
	t.budget.Grow(-int64(len(t.slots)) * 8)
	t.slots = nil
}

// countNaive counts in one table and hands its groups out a part of at
// most PartGroups groups at a time.
// With cfg.Threads above one, each worker counts its morsels in a table
// of its own, merged into the first by Finalize, or with cfg.Shared, in
// the one table under a lock.
type countNaive struct {
	cfg     Config
	keyType vec.Type
	nspecs  int
	shared  bool
	mu      sync.Mutex
	// Per worker (one when shared): its arena, table and NULL keys.
	arenas []*Arena
	ts     []*countTable
	nulls  []int64
	slots  int // the largest table's, before the merge
	done   bool
	// After the first Next: the groups' keys and counts, their bytes,
	// and the next group to hand out.
	out      []*vec.Vector
	outBytes int64
	next     int
}

func newCountNaive(keyType vec.Type, nspecs int, cfg Config) (*countNaive, error) {
	n := max(cfg.Threads, 1)
	if cfg.Shared {
		n = 1
	}
	a := &countNaive{cfg: cfg, keyType: keyType, nspecs: nspecs, shared: cfg.Shared, nulls: make([]int64, n)}
	for range n {
		ar := NewArena(cfg.HugePages, cfg.Pool)
		t, err := newCountTable(0, ar, cfg.Budget)
		if err != nil {
			ar.Free()
			a.Close()
			return nil, err
		}
		a.arenas, a.ts = append(a.arenas, ar), append(a.ts, t)
	}
	return a, nil
}

func (a *countNaive) Workers() int {
	if a.shared {
		return max(a.cfg.Threads, 1)
	}
	return len(a.ts)
}

func (a *countNaive) Sink(w int, in Input) error {
	if a.shared {
		a.mu.Lock()
		defer a.mu.Unlock()
		w = 0
	}
	k := in.Keys[0]
	keys := k.I64[:in.N]
	if k.Valid != nil {
		var n int64
		keys, n = nonNull(k)
		a.nulls[w] += n
	}
	t := a.ts[w]
	return naiveError(t.n, t.add(keys))
}

func (a *countNaive) Flush(int) error { return nil }

// Finalize merges the other workers' tables into the first.
func (a *countNaive) Finalize(ctx context.Context) error {
	if len(a.ts) == 0 {
		return fmt.Errorf("aggregate: finalized after close")
	}
	for _, t := range a.ts {
		a.slots = max(a.slots, len(t.slots)/2)
	}
	for w := 1; w < len(a.ts); w++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := a.ts[0].merge(a.ts[w]); err != nil {
			return naiveError(a.ts[0].n, err)
		}
		a.nulls[0] += a.nulls[w]
		a.ts[w].release()
		a.arenas[w].Free()
	}
	a.ts, a.arenas, a.nulls = a.ts[:1], a.arenas[:1], a.nulls[:1]
	return nil
}

// Next hands out the groups a part of at most PartGroups at a time. The
// first call takes every group out of the table into one key and one count
// column, charged until Close, and gives the table's slots back; each part
// is views of those columns (charged nothing more) and, for each further
// count(*), a copy of its counts (charged as the part's).
func (a *countNaive) Next(context.Context, int) (Part, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.out == nil {
		if a.done || len(a.ts) != 1 {
			return Part{}, false, nil
		}
		a.done = true
		t := a.ts[0]
		keys, counts := vec.NewVector(vec.Int64, t.n+1), vec.NewVector(vec.Int64, t.n+1)
		t.emit(keys, counts)
		keys.Type = a.keyType
		if a.nulls[0] > 0 {
			keys.AppendNull()
			counts.AppendInt(a.nulls[0])
		}
		b := VectorBytes(keys, counts)
		if err := a.cfg.Budget.Grow(b); err != nil {
			return Part{}, false, err
		}
		a.outBytes = b
		a.out = []*vec.Vector{keys, counts}
		t.release()
	}
	keys, counts := a.out[0], a.out[1]
	if a.next >= keys.Len {
		return Part{}, false, nil
	}
	lo := a.next
	hi := min(lo+PartGroups, keys.Len)
	c := tightSlice(counts, lo, hi)
	p := Part{Keys: []*vec.Vector{tightSlice(keys, lo, hi)}, Aggs: []*vec.Vector{c}, Groups: hi - lo}
	for j := 1; j < a.nspecs; j++ {
		p.Aggs = append(p.Aggs, &vec.Vector{Type: vec.Int64, Len: c.Len, I64: append([]int64(nil), c.I64...)})
	}
	p.Bytes = VectorBytes(p.Aggs[1:]...)
	if err := a.cfg.Budget.Grow(p.Bytes); err != nil {
		return Part{}, false, err
	}
	a.next = hi
	return p, true, nil
}

func (a *countNaive) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := Stats{SinkPhase: "aggregate", Complete: true, TableSlots: a.slots}
	if a.out != nil {
		st.Groups = a.out[0].Len
		return st
	}
	for w, t := range a.ts {
		st.Groups += t.n
		st.TableSlots = max(st.TableSlots, len(t.slots)/2)
		if a.nulls[w] > 0 && w == 0 {
			st.Groups++
		}
	}
	return st
}

// Close gives the tables back.
func (a *countNaive) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for w, t := range a.ts {
		t.release()
		a.arenas[w].Free()
	}
	a.ts, a.arenas = nil, nil
	a.cfg.Budget.Grow(-a.outBytes)
	a.out, a.outBytes = nil, 0
}

// countRadix scatters each worker's keys into its partitions, staged a
// cache line at a time (Sink), then counts one partition at a time in a
// table sized for it (Next).
type countRadix struct {
	cfg      Config
	keyType  vec.Type
	nspecs   int
	bits     int
	rowsHint int64 // rows per worker expected

	// Per worker: its arena, partitions, table and table sizing.
	arenas []*Arena
	scats  []*countScatter
	tables []*countTable
	ests   []partitionEstimate
	done   bool // one worker handed its one part out

	nextPart atomic.Int64
	left     atomic.Int64 // partitions not yet counted
	nullsOut atomic.Bool  // the NULL group went out
	groups   atomic.Int64
	maxSlots atomic.Int64
	closed   bool
}

func newCountRadix(keyType vec.Type, nspecs int, cfg Config) (*countRadix, error) {
	threads := cfg.threads()
	a := &countRadix{cfg: cfg, keyType: keyType, nspecs: nspecs, bits: cfg.RadixBits, rowsHint: cfg.RowsHint,
		arenas: make([]*Arena, threads), scats: make([]*countScatter, threads),
		tables: make([]*countTable, threads), ests: make([]partitionEstimate, threads)}
	if threads > 1 {
		a.rowsHint = a.rowsHint * 3 / 2 / int64(threads)
	}
	a.left.Store(1 << cfg.RadixBits)
	for i := range a.arenas {
		a.arenas[i] = NewArena(cfg.HugePages, cfg.Pool)
	}
	return a, nil
}

func (a *countRadix) Workers() int { return len(a.scats) }

// start gives worker w its partitions, charged for its share of the rows.
func (a *countRadix) start(w int) error {
	sc, err := newCountScatter(a.bits, a.rowsHint, a.arenas[w])
	if err != nil {
		return err
	}
	if err := a.cfg.Budget.Grow(a.rowsHint * 8); err != nil {
		return fmt.Errorf("radix partitions: %w", err)
	}
	a.scats[w] = sc
	return nil
}

func (a *countRadix) Sink(w int, in Input) error {
	sc := a.scats[w]
	if sc == nil {
		if err := a.start(w); err != nil {
			return err
		}
		sc = a.scats[w]
	}
	k := in.Keys[0]
	keys := k.I64[:in.N]
	if k.Valid != nil {
		var n int64
		keys, n = nonNull(k)
		sc.nulls += n
	}
	sc.scatter(keys, uint(64-a.bits))
	return nil
}

func (a *countRadix) Flush(w int) error {
	if a.scats[w] == nil {
		if err := a.start(w); err != nil {
			return err
		}
	}
	a.scats[w].flush()
	return nil
}

func (a *countRadix) Finalize(context.Context) error { return nil }

// Next counts the next partition that has keys with worker w's table and
// hands its groups out; after the last, the NULL group, if there is one,
// is a part of its own.
//
// One worker counts every partition on the first call and hands them out
// as one part: it appends every partition's groups to one pair of
// columns, sized for a fair share of groups up front (growing by doubling
// copies them and faults their pages in again), as the cache model
// models it. Several give each partition's groups columns of their own:
// a pair per worker, sized for a guess of its share, cost fresh pages
// that faulted in on every query (for Q15's 3.5M groups with two
// threads, about 5,800 page faults a query, against 2,000-3,300 with a
// pair per partition).
func (a *countRadix) Next(ctx context.Context, w int) (Part, bool, error) {
	if len(a.tables) == 1 {
		return a.all(ctx)
	}
	for {
		p, ok, err := claim(ctx, &a.nextPart, 1<<a.bits)
		if err != nil {
			return Part{}, false, err
		}
		if !ok {
			return a.nullPart()
		}
		n, err := a.count(w, p)
		if err != nil {
			return Part{}, false, err
		}
		if n == 0 {
			continue
		}
		part, err := a.tables[w].emitPart(a.keyType, 0, a.nspecs, a.cfg.Budget)
		part.Rows = int64(n)
		return part, err == nil, err
	}
}

// all counts every partition with the one worker's table and returns all
// the groups as one part.
func (a *countRadix) all(ctx context.Context) (Part, bool, error) {
	if a.done {
		return Part{}, false, nil
	}
	a.done = true
	keys, counts := vec.NewVector(vec.Int64, int(a.rowsHint/4)), vec.NewVector(vec.Int64, int(a.rowsHint/4))
	var rows int64
	for {
		p, ok, err := claim(ctx, &a.nextPart, 1<<a.bits)
		if err != nil {
			return Part{}, false, err
		}
		if !ok {
			break
		}
		n, err := a.count(0, p)
		if err != nil {
			return Part{}, false, err
		}
		if n > 0 {
			a.tables[0].emit(keys, counts)
		}
		rows += int64(n)
	}
	nulls := a.scats[0].nulls
	if nulls > 0 {
		a.groups.Add(1)
	}
	part := countPart(a.keyType, keys, counts, nulls, a.nspecs)
	part.Rows = rows
	if err := part.charge(a.cfg.Budget, 0); err != nil {
		return Part{}, false, err
	}
	return part, true, nil
}

// count counts partition p with worker w's table and returns its rows.
func (a *countRadix) count(w, p int) (int, error) {
	defer a.left.Add(-1)
	n := 0
	for _, sc := range a.scats {
		n += len(sc.parts[p])
	}
	if n == 0 {
		return 0, nil
	}
	t, est := a.tables[w], &a.ests[w]
	var err error
	if t == nil {
		t, err = newCountTable(est.hint(n), a.arenas[w], a.cfg.Budget)
		a.tables[w] = t
	} else {
		err = t.reset(est.hint(n))
	}
	if err != nil {
		return 0, err
	}
	for _, sc := range a.scats {
		if err := t.add(sc.parts[p]); err != nil {
			return 0, err
		}
	}
	est.saw(n, t.n)
	if s := int64(len(t.slots) / 2); s > a.maxSlots.Load() {
		a.maxSlots.Store(s)
	}
	a.groups.Add(int64(t.n))
	return n, nil
}

// nullPart returns the NULL group once, to the first worker that asks
// after the last partition.
func (a *countRadix) nullPart() (Part, bool, error) {
	var nulls int64
	for _, sc := range a.scats {
		nulls += sc.nulls
	}
	if nulls == 0 || !a.nullsOut.CompareAndSwap(false, true) {
		return Part{}, false, nil
	}
	a.groups.Add(1)
	keys, counts := vec.NewVector(vec.Int64, 1), vec.NewVector(vec.Int64, 1)
	p := countPart(a.keyType, keys, counts, nulls, a.nspecs)
	if err := p.charge(a.cfg.Budget, 0); err != nil {
		return Part{}, false, err
	}
	return p, true, nil
}

func (a *countRadix) Stats() Stats {
	return Stats{SinkPhase: "partition", PerPartition: len(a.tables) > 1, Groups: int(a.groups.Load()), Complete: a.left.Load() <= 0, TableSlots: int(a.maxSlots.Load())}
}

// Close gives back the partitions' charge, the tables and the arenas.
func (a *countRadix) Close() {
	if a.closed {
		return
	}
	a.closed = true
	for _, sc := range a.scats {
		if sc != nil {
			a.cfg.Budget.Grow(-a.rowsHint * 8)
		}
	}
	for _, t := range a.tables {
		if t != nil {
			t.release()
		}
	}
	for _, ar := range a.arenas {
		ar.Free()
	}
}
