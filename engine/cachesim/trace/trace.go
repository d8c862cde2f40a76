// Package trace drives the cache model (engine/cachesim) with the address
// streams of the engine's own GROUP BY: a traced pass (agg.TraceCount)
// over the same hash function, table capacity and slot layout, partition
// count, write-combining buffers, partition buffers and page size as the
// real run, plus the sequential read of the key column that feeds it.
//
// What is and is not modelled: addresses are assigned by a bump allocator
// (64 B aligned below 32 KiB, 8 KiB aligned above, as Go's heap aligns
// large objects; 2 MiB aligned on huge pages above cachesim.HugeBase), so
// cache-set conflicts between buffers are not those of a particular run;
// memory that the allocator zeroes is taken to be fresh (no writes); the
// key column is one array read in order; the Go runtime, the goroutine
// stacks and the instruction stream are not modelled. With several
// threads each worker is modelled on its own core with private L1 and L2
// and a share of the L3 (the L3's sets divided by the thread count,
// rounded down to a power of two), its streams not interleaved with the
// others'; coherence between cores (false sharing) is not modelled.
package trace

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/vec"
)

const vecInt64 = vec.Int64

// Options configure a modelled run.
type Options struct {
	Geometry cachesim.Geometry
	// Sampling is the set and time sampling; Every may be TimeAuto.
	Sampling  cachesim.Sampling
	Strategy  agg.Strategy
	Threads   int
	RadixBits int
	HugePages bool
	// MorselRows is the rows per morsel (default 1<<16); morsels go to
	// workers round robin.
	MorselRows int
	// NoRowsHint models a run that did not know its input size (a query
	// with WHERE): partition buffers are not sized from it.
	NoRowsHint bool
	// MemoryLimit bounds the traced pass's tables (bytes; 0: none), as the
	// query's memory limit bounds the real run's.
	MemoryLimit int64
}

func (o Options) budget() *agg.Budget {
	if o.MemoryLimit <= 0 {
		return nil
	}
	return &agg.Budget{Limit: o.MemoryLimit}
}

// Phase is one worker's modelled counts for one phase.
type Phase struct {
	Worker int
	Name   string
	Stats  cachesim.Stats
}

// Result is a modelled run.
type Result struct {
	Rows     int64
	Groups   int
	Total    cachesim.Stats
	Phases   []Phase
	Geometry cachesim.Geometry // per worker (L3 share included)
	Sampling cachesim.Sampling
}

// AutoSampling returns a sampling of about rate (a power of two fraction,
// at least 1/64) that divides every level of g: the modulus is the
// smallest level's set count, capped at 64.
func AutoSampling(g cachesim.Geometry, rate float64) cachesim.Sampling {
	if rate >= 1 || g.Prefetch != cachesim.PrefetchOff {
		return cachesim.Sampling{}
	}
	mod := 64
	for _, l := range []cachesim.Level{g.L1, g.L2, g.L3} {
		if s := l.Sets(g.LineSize); s > 0 && s < mod {
			mod = s
		}
	}
	keep := max(2, int(float64(mod)*rate+0.5))
	if mod < 4 || keep >= mod {
		return cachesim.Sampling{}
	}
	return cachesim.Sampling{Mod: mod, Keep: keep}
}

// TimeAuto as Options.Sampling.Every asks Count, Generic, GenericString
// and Scan to choose time sampling from the input's size (AutoEvery).
const TimeAuto = -1

// AutoEvery returns the time-sampling period (cachesim.Sampling.Every)
// for an input of rows rows: none below 4M rows, else the power of two
// that counts about 1M of them, at most 1 in 64. With the default
// windows (16K line accesses counted after 32K of warm-up) that
// simulates 3/16 of a 10M-row input's accesses and 3/64 of a 100M-row
// one's.
func AutoEvery(rows int64) int {
	if rows < 4<<20 {
		return 0
	}
	e := 1
	for e < 64 && rows/int64(e) > 1<<20 {
		e *= 2
	}
	return e
}

// resolve returns s with TimeAuto replaced for rows rows.
func resolve(s cachesim.Sampling, rows int64) cachesim.Sampling {
	if s.Every == TimeAuto {
		s.Every = AutoEvery(rows)
	}
	return s
}

// share returns g with its L3 divided among threads workers.
func share(g cachesim.Geometry, threads int) cachesim.Geometry {
	if threads <= 1 || g.L3.Size == 0 {
		return g
	}
	sets := g.L3.Sets(g.LineSize) / threads
	if sets < 1 {
		sets = 1
	}
	sets = 1 << (bits.Len(uint(sets)) - 1)
	g.L3.Size = int64(sets) * int64(g.L3.Ways) * int64(g.LineSize)
	return g
}

// model implements agg.Tracer over one Sim per worker. Started (start),
// it simulates on a goroutine of its own: the traced pass hands it its
// accesses in batches (agg.BatchTracer), which it queues, so that the
// traced pass and the simulation of the stream it has produced so far run
// at once, on two cores where there are two. The stream, its order and
// the results are those of a simulation in line: one goroutine simulates
// every access, in order.
type model struct {
	geo     cachesim.Geometry
	samp    cachesim.Sampling
	sims    []*cachesim.Sim // by worker id
	phase   map[int]int     // worker -> index into phases of its open phase
	mark    map[int]cachesim.Mark
	phases  []Phase
	bases   baseTable
	small   uint64
	huge    uint64
	err     error // the simulation's (newSim)
	workers []int
	// allocErr is the traced pass's (Alloc: too many buffers).
	allocErr error

	// The pipeline, while started: batches to simulate (queue), buffers
	// to fill (free) and the simulating goroutine's end (done).
	queue chan simBatch
	free  chan []agg.TraceAccess
	done  chan struct{}
}

// baseTable holds the buffers' addresses, by buffer number: the first
// baseFirst in one array, the rest in blocks that never move, so that the
// simulating goroutine reads the address of a buffer allocated before the
// batch it simulates while the traced pass appends others.
type baseTable struct {
	n      int
	first  [baseFirst]uint64
	blocks [baseBlocks]*[baseBlock]uint64
}

const (
	baseFirst  = 1 << 14
	baseBlock  = 1 << 12
	baseBlocks = 1 << 15 // 2^27 buffers beyond the first
)

func (t *baseTable) add(a uint64) (int, error) {
	i := t.n
	if i < baseFirst {
		t.first[i] = a
		t.n++
		return i, nil
	}
	j := i - baseFirst
	if j >= baseBlock*baseBlocks {
		return 0, fmt.Errorf("trace: more than %d buffers", baseFirst+baseBlock*baseBlocks)
	}
	if t.blocks[j/baseBlock] == nil {
		t.blocks[j/baseBlock] = new([baseBlock]uint64)
	}
	t.blocks[j/baseBlock][j%baseBlock] = a
	t.n++
	return i, nil
}

func (t *baseTable) at(buf int) uint64 {
	if uint(buf) < baseFirst {
		return t.first[buf]
	}
	j := buf - baseFirst
	return t.blocks[j/baseBlock][j%baseBlock]
}

// simBatch is a queued run of one worker's accesses, or one call that is
// not a batch: a phase (phase set) or an access or range too large for a
// batch (big set).
type simBatch struct {
	w     int
	batch []agg.TraceAccess
	phase string
	big   *bigAccess
}

type bigAccess struct {
	addr       uint64
	size       int64
	write, rng bool
}

// Pipeline sizes: accesses per batch (512 KiB), batches in flight.
const (
	simBatchLen = 1 << 15
	simBatches  = 4
)

func newModel(g cachesim.Geometry, s cachesim.Sampling) *model {
	return &model{
		geo: g, samp: s, phase: map[int]int{}, mark: map[int]cachesim.Mark{},
		small: cachesim.PatternBase, huge: cachesim.HugeBase,
	}
}

// start starts the simulating goroutine, where Go runs goroutines in
// parallel (GOMAXPROCS above 1; in a browser it does not, and the model
// simulates in line); stop (or result) ends it.
func (m *model) start() {
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	m.queue = make(chan simBatch, simBatches)
	m.free = make(chan []agg.TraceAccess, simBatches+2)
	for range simBatches + 2 {
		m.free <- make([]agg.TraceAccess, 0, simBatchLen)
	}
	m.done = make(chan struct{})
	go m.simulate()
}

// simulate runs the queued batches until the queue closes.
func (m *model) simulate() {
	defer close(m.done)
	for b := range m.queue {
		switch {
		case b.big != nil:
			if r := b.big; r.rng {
				m.sim(b.w).Range(r.addr, r.size, r.write)
			} else {
				m.sim(b.w).Access(r.addr, int(r.size), r.write)
			}
		case b.batch != nil:
			m.run(b.w, b.batch)
			m.free <- b.batch[:0]
		default:
			m.startPhase(b.w, b.phase)
		}
	}
}

// run simulates worker w's batch.
func (m *model) run(w int, batch []agg.TraceAccess) {
	s := m.sim(w)
	for i := range batch {
		a := &batch[i]
		addr := m.bases.at(int(a.Buf)) + uint64(a.Off)
		if a.Range {
			s.Range(addr, int64(a.Size), a.Write)
		} else {
			s.Access(addr, int(a.Size), a.Write)
		}
	}
}

// stop ends the simulating goroutine once it has simulated everything
// queued; the model's state is then this goroutine's again.
func (m *model) stop() {
	if m.queue == nil {
		return
	}
	close(m.queue)
	<-m.done
	m.queue = nil
}

func (m *model) sim(w int) *cachesim.Sim {
	if uint(w) < uint(len(m.sims)) && m.sims[w] != nil {
		return m.sims[w]
	}
	return m.newSim(w)
}

func (m *model) newSim(w int) *cachesim.Sim {
	for len(m.sims) <= w {
		m.sims = append(m.sims, nil)
	}
	s, err := cachesim.New(m.geo, m.samp)
	if err != nil {
		// Reported by result; a one-line cache keeps the run going.
		m.err = err
		s, _ = cachesim.New(cachesim.Geometry{LineSize: 64, L1: cachesim.Level{Size: 64, Ways: 1}}, cachesim.Sampling{})
	}
	m.sims[w] = s
	m.workers = append(m.workers, w)
	return s
}

func (m *model) Alloc(w int, n int64, huge, zeroed bool) int {
	var a uint64
	switch {
	case huge:
		a = (m.huge + (2<<20 - 1)) &^ (2<<20 - 1)
		m.huge = a + uint64(n)
	case n >= 32<<10:
		a = (m.small + 8191) &^ 8191
		m.small = a + uint64(n)
	default:
		a = (m.small + 63) &^ 63
		m.small = a + uint64(max(n, 1))
	}
	buf, err := m.bases.add(a)
	if err != nil && m.allocErr == nil {
		m.allocErr = err
	}
	return buf
}

func (m *model) Access(w, buf int, off int64, size int, write bool) {
	if m.queue != nil {
		m.queue <- simBatch{w: w, big: &bigAccess{addr: m.bases.at(buf) + uint64(off), size: int64(size), write: write}}
		return
	}
	m.sim(w).Access(m.bases.at(buf)+uint64(off), size, write)
}

// Accesses is Access and Range for a batch, in order (agg.BatchTracer).
func (m *model) Accesses(w int, batch []agg.TraceAccess) []agg.TraceAccess {
	if m.queue == nil {
		m.run(w, batch)
		if batch == nil {
			return make([]agg.TraceAccess, 0, simBatchLen)
		}
		return batch[:0]
	}
	if len(batch) > 0 {
		m.queue <- simBatch{w: w, batch: batch}
	}
	return <-m.free
}

func (m *model) Range(w, buf int, off, size int64, write bool) {
	if m.queue != nil {
		m.queue <- simBatch{w: w, big: &bigAccess{addr: m.bases.at(buf) + uint64(off), size: size, write: write, rng: true}}
		return
	}
	m.sim(w).Range(m.bases.at(buf)+uint64(off), size, write)
}

func (m *model) Phase(w int, name string) {
	if m.queue != nil {
		m.queue <- simBatch{w: w, phase: name}
		return
	}
	m.startPhase(w, name)
}

func (m *model) startPhase(w int, name string) {
	m.close(w)
	m.mark[w] = m.sim(w).Mark()
	m.phase[w] = len(m.phases)
	m.phases = append(m.phases, Phase{Worker: w, Name: name})
}

func (m *model) close(w int) {
	i, ok := m.phase[w]
	if !ok {
		return
	}
	m.phases[i].Stats = m.sim(w).Since(m.mark[w])
	delete(m.phase, w)
}

func (m *model) result(rows int64, groups int) (*Result, error) {
	m.stop()
	for _, w := range m.workers {
		m.close(w)
	}
	if m.err == nil {
		m.err = m.allocErr
	}
	if m.err != nil {
		return nil, m.err
	}
	r := &Result{Rows: rows, Groups: groups, Phases: m.phases, Geometry: m.geo, Sampling: m.samp}
	for _, w := range m.workers {
		r.Total = r.Total.Add(m.sims[w].Stats())
	}
	return r, nil
}

// MaxRows bounds a modelled run.
const MaxRows = 1 << 32

// start checks a run of n keys and builds its model: the threads it runs
// on (one for naive), each with its share of the geometry, and the rows
// per morsel.
func start(n int, o Options) (m *model, threads, rows int, err error) {
	if int64(n) > MaxRows {
		return nil, 0, 0, fmt.Errorf("trace: %d rows, at most %d", n, int64(MaxRows))
	}
	threads = max(o.Threads, 1)
	if o.Strategy == agg.Naive {
		threads = 1
	}
	g := share(o.Geometry, threads)
	if err := g.Validate(); err != nil {
		return nil, 0, 0, err
	}
	rows = o.MorselRows
	if rows <= 0 {
		rows = 1 << 16
	}
	return newModel(g, resolve(o.Sampling, int64(n))), threads, rows, nil
}

// Count models SELECT k, count(*) ... GROUP BY k over the non-NULL keys
// (the engine's tuned count path), including the read of the key column.
func Count(ctx context.Context, keys []int64, o Options) (*Result, error) {
	m, threads, rows, err := start(len(keys), o)
	if err != nil {
		return nil, err
	}
	m.start()
	defer m.stop()
	col := m.Alloc(0, int64(len(keys))*8, false, false)
	var ms []agg.TraceMorsel
	for i := 0; i < len(keys); i += rows {
		ms = append(ms, agg.TraceMorsel{Keys: keys[i:min(i+rows, len(keys))], Buf: col, Off: int64(i) * 8})
	}
	hint := int64(len(keys))
	if o.NoRowsHint {
		hint = 0
	}
	groups, err := agg.TraceCount(ctx, agg.TraceConfig{
		Strategy: o.Strategy, Threads: threads, RadixBits: o.RadixBits, HugePages: o.HugePages, RowsHint: hint, Budget: o.budget(),
	}, ms, m)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return m.result(int64(len(keys)), groups)
}

// Scan models a sequential read of cols 8-byte columns of rows rows each,
// column by column within morsels of MorselRows.
func Scan(ctx context.Context, rows int64, cols int, o Options) (*Result, error) {
	if rows > MaxRows || cols < 1 || cols > 1024 {
		return nil, fmt.Errorf("trace: scan of %d rows × %d columns out of range", rows, cols)
	}
	m := newModel(o.Geometry, resolve(o.Sampling, rows*int64(cols)))
	mr := int64(o.MorselRows)
	if mr <= 0 {
		mr = 1 << 16
	}
	bufs := make([]int, cols)
	for c := range bufs {
		bufs[c] = m.Alloc(0, rows*8, o.HugePages, false)
	}
	m.Phase(0, "scan")
	s := m.sim(0)
	for lo := int64(0); lo < rows; lo += mr {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+mr, rows)
		for _, b := range bufs {
			for r := lo; r < hi; r++ {
				s.Load(m.bases.at(b)+uint64(r)*8, 8)
			}
		}
	}
	return m.result(rows, 0)
}

// Generic models the engine's generic GROUP BY (Aggregate) over one
// integer key column, with one 8-byte input column per aggregate that has
// an input, pre-aggregating as a run without huge pages does.
func Generic(ctx context.Context, keys []int64, specs []agg.Spec, o Options) (*Result, error) {
	v := &vec.Vector{Type: vec.Int64, I64: keys, Len: len(keys)}
	return Aggregate(ctx, []*vec.Vector{v}, specs, o, AggOptions{Reused: math.MaxInt64})
}

// GenericString models the engine's generic GROUP BY (Aggregate) over
// one string key column, keys holding every row, with one 8-byte input
// column per aggregate that has an input.
func GenericString(ctx context.Context, keys *vec.Vector, specs []agg.Spec, o Options) (*Result, error) {
	if keys == nil || keys.Type != vec.String {
		return nil, fmt.Errorf("trace: want a string key column")
	}
	return Aggregate(ctx, []*vec.Vector{keys}, specs, o, AggOptions{Reused: math.MaxInt64})
}
