package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// hashAggOp is GROUP BY (HASH_GROUP_BY) or an aggregate without keys
// (UNGROUPED_AGGREGATE). It evaluates its keys and aggregate inputs over
// each batch of its input and runs them through an agg.Aggregator, as
// strategy.go plans: its workers (runWorkers) sink the input, then the
// aggregator hands the groups out a part at a time, each a batch of the
// keys, then one column per aggregate. It is a pipeline breaker: it reads
// all its input before it returns a group. Radix and parallel aggregate
// each partition when its groups are asked for (with one thread on the
// goroutine that calls next; with several, on the workers, a partition per
// worker ahead of the consumer), so that a consumer done with a part (an
// aggregate over a subquery's groups, a top-N, a LIMIT) lets its memory
// serve the next partitions'.
//
// Each part is charged from when the aggregator returns it until the
// consumer asks for the next or closes the operator.
type hashAggOp struct {
	opBase
	keys      []expr.Expr
	keyNames  []string
	keyNotes  []string    // the GROUP BY keys the plan does not hash
	args      []expr.Expr // per spec; nil for count(*)
	specs     []agg.Spec
	aggNames  []string
	rewritten int   // sums rewritten by sum_rewrite
	rowsHint  int64 // input rows when known before running (-1: unknown)
	// serial keeps an aggregate without keys on one worker: its input
	// (a subquery's, a GROUP BY's) is not read from several.
	serial bool
	// notes are lines EXPLAIN shows after the aggregates: how a
	// two-step DISTINCT aggregation (distinct_groups.go) split the work.
	notes []string
	// estimateRows is how many input rows the group estimate sketches
	// (0: the default, estimateRows).
	estimateRows int64
	// estimateReaders, in tests, is how many workers read the estimate's
	// rows whatever the strategy and threads (0: estimateHelpers decides).
	estimateReaders int
	// distinctGroups, if positive, fails the aggregation (grouped
	// DISTINCT aggregates in one step) with errManyDistinctGroups when
	// the estimate finds more groups: the statement runs again in two
	// steps (retryInTwoSteps).
	distinctGroups int64

	settings Settings
	cache    CacheSizes

	ran      bool
	plan     aggPlan
	ag       agg.Aggregator
	twoPhase bool        // radix: Next aggregates the partitions
	perPart  bool        // Next hands out a part per partition
	budget   *agg.Budget // the operator's share of the statement's
	finished bool        // every group was handed out
	stopped  bool        // the consumer wanted no more groups
	held     int64       // the part handed out last, until the next

	// The estimate's first rows, aggregated first and charged until they
	// are, and what the operator's time excludes: its input's.
	pre     []agg.Input
	preHeld int64
	// estimateCursors is the number of workers (0 to n-1) whose scan
	// cursors the estimate read from in parallel; 0 when it read on
	// worker 0 alone.
	estimateCursors int
	childNanos      atomic.Int64
	ownNanos        time.Duration // the estimate's, less its input's

	// With parallel workers: the parts they aggregated ahead, closed when
	// they end, with runErr and their statistics; quit tells them the
	// consumer wants no more.
	parts   chan agg.Part
	quit    chan struct{}
	runErr  error
	workers []WorkerStat
	// With one thread, the time and rows of Next (the "aggregate" phase
	// of radix, on the consumer's goroutine), and whether it began.
	nextTime  time.Duration
	nextRows  int64
	nextBegun bool
	// With parallel workers, the time of Finalize (the merge of the
	// workers' tables or states), which the first worker to reach the
	// second phase runs before any starts it: counted in that phase.
	finalizeTime  time.Duration
	finalizePhase string

	// For EXPLAIN ANALYZE: the parts handed on, their bytes and the most
	// held at once; what the aggregator did.
	outBatches       int
	outBytes, outMax int64
	groups           int
	tableSlots       int
	preAgg           agg.PreAggStats
	hugeNote         string // what the engine's pool measured of fresh huge pages
	spilled          agg.SpillStats

	// The statement's spill space, under temp_directory or in memory.
	space lazySpace
}

func (a *hashAggOp) keyTypes() []vec.Type {
	kt := make([]vec.Type, len(a.keys))
	for i, k := range a.keys {
		kt[i] = k.Type()
	}
	return kt
}

func (a *hashAggOp) detail() []string {
	var d []string
	if len(a.keys) > 0 {
		d = append(d, "keys: "+strings.Join(a.keyNames, ", "))
	}
	d = append(d, a.keyNotes...)
	if len(a.aggNames) > 0 {
		d = append(d, "aggregates: "+strings.Join(a.aggNames, ", "))
	}
	d = append(d, a.notes...)
	if len(a.keys) == 0 && countsOnly(a.specs) {
		d = append(d, "count(*): added up from the row counts of the input's batches, no values read")
	}
	if a.rewritten > 0 {
		d = append(d, fmt.Sprintf("sum_rewrite: %d sum(x + c) rewritten to sum(x) + c * count(x)", a.rewritten))
	}
	p := a.plan
	if !a.ran {
		p = a.planFor(nil, 0)
	}
	d = append(d, p.detail(len(a.keys) > 0 || a.ran)...)
	switch {
	case a.stopped:
		d = append(d, fmt.Sprintf("groups: stopped after returning %d, as its consumer needed no more", a.stats.rowsOut.Load()))
	case a.finished && len(a.keys) > 0:
		d = append(d, fmt.Sprintf("groups: %d, largest table: %d slots", a.groups, a.tableSlots))
	}
	if a.outBatches > 0 && a.perPart {
		d = append(d, fmt.Sprintf("output: %d batches of %s, handed on as each partition was aggregated: at most %s held at once",
			a.outBatches, agg.FormatBytes(a.outBytes), agg.FormatBytes(a.outMax)))
	}
	if a.outBatches > 1 && !a.perPart && len(a.keys) > 0 {
		d = append(d, fmt.Sprintf("output: %d batches of up to %d groups, handed on one at a time", a.outBatches, agg.PartGroups))
	}
	if line := a.preAgg.Describe(); line != "" {
		d = append(d, "pre-aggregation: "+line)
	}
	if sp := a.spilled; sp.Files > 0 {
		d = append(d, fmt.Sprintf("spilled: %d partitions, %s in %d files to %s, write %.1f ms, read back %.1f ms",
			sp.Partitions, agg.FormatBytes(sp.Bytes), sp.Files, sp.Dir,
			float64(sp.Write.Microseconds())/1000, float64(sp.Read.Microseconds())/1000))
		if sp.Kept > 0 {
			d = append(d, fmt.Sprintf("kept in memory: %s of partitions (%d spill partitions wholly), aggregated from there with what was read back: only the groups of partitions past the limit's share spilled",
				agg.FormatBytes(sp.Kept), sp.Whole))
		}
		if sp.Splits > 0 {
			d = append(d, fmt.Sprintf("spilled: %d partitions (or parts) too large for memory were split %d ways on further hash bits, %d levels deep at most",
				sp.Splits, agg.SplitWays, sp.Depth))
		}
	}
	if a.hugeNote != "" {
		d = append(d, "huge pages: "+a.hugeNote)
	}
	return d
}

// input is one evaluated batch of the aggregation's input.
func (a *hashAggOp) input(x *execCtx, b *vec.Batch) (agg.Input, error) {
	keys, err := evalAll(x, a, a.keys, b)
	if err != nil {
		return agg.Input{}, err
	}
	args, err := evalAll(x, a, a.args, b)
	if err != nil {
		return agg.Input{}, err
	}
	var temp int64
	for i, k := range a.keys {
		if !isColumnRef(k) {
			temp += vecBytes(keys[i : i+1])
		}
	}
	for i, e := range a.args {
		if e != nil && !isColumnRef(e) {
			temp += vecBytes(args[i : i+1])
		}
	}
	if err := x.fits(a, temp); err != nil {
		return agg.Input{}, err
	}
	return agg.Input{Keys: keys, Args: args, N: b.Len}, nil
}

// evalAll evaluates exprs over b for op; nil expressions give nil vectors.
func evalAll(x *execCtx, op operator, exprs []expr.Expr, b *vec.Batch) ([]*vec.Vector, error) {
	out := make([]*vec.Vector, len(exprs))
	for i, e := range exprs {
		if e == nil {
			continue
		}
		v, held, err := evalBounded(x, op, e, b)
		x.release(op, held) // the caller checks what it holds with fits
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// errConsumerDone ends the workers of an aggregation whose consumer
// closed it before its last group.
var errConsumerDone = errors.New("the consumer of the groups is done")

func (a *hashAggOp) next(x *execCtx, w int) (*vec.Batch, error) {
	if !a.ran {
		a.ran = true
		if err := a.start(x); err != nil {
			return nil, err
		}
	}
	if a.finished || a.ag == nil {
		return nil, nil
	}
	p, ok, err := a.nextPart(x)
	if err != nil {
		return nil, err
	}
	if !ok {
		a.finish(x)
		return nil, nil
	}
	// The part before this one is the consumer's no more: it has copied,
	// charged or dropped it.
	a.budget.Grow(-a.held)
	a.held = p.Bytes
	a.outBatches++
	a.outBytes += p.Bytes
	a.outMax = max(a.outMax, p.Bytes)
	a.stats.rowsOut.Add(int64(p.Groups))
	vs := append(append(make([]*vec.Vector, 0, len(p.Keys)+len(p.Aggs)), p.Keys...), p.Aggs...)
	return &vec.Batch{Vecs: vs, Len: p.Groups}, nil
}

// pull returns the child's next batch for worker w, timing it and
// counting its rows.
func (a *hashAggOp) pull(x *execCtx, w int) (*vec.Batch, error) {
	t0 := time.Now()
	b, err := a.children[0].next(x, w)
	a.childNanos.Add(int64(time.Since(t0)))
	if b != nil {
		a.stats.rowsIn.Add(int64(b.Len))
	}
	return b, err
}

// start plans the aggregation (after estimating its groups from its first
// rows where the plan depends on them) and sinks its input: on this
// goroutine with one thread; with several, it starts the workers, which
// go on to aggregate the partitions ahead of next.
func (a *hashAggOp) start(x *execCtx) error {
	t0 := time.Now()
	// The aggregation's memory is charged to the statement's budget
	// through the operator's own, so that its statistics show its peak.
	a.budget = &agg.Budget{Parent: x.budget, Observe: a.stats.addMem}
	est, err := a.estimate(x)
	if err != nil {
		return err
	}
	if a.distinctGroups > 0 && est != nil && est.groups > a.distinctGroups {
		return fmt.Errorf("%s: ~%d groups, past %d: %w", a.label, est.groups, a.distinctGroups, errManyDistinctGroups)
	}
	// The plan weighs what the limit leaves: the scan's reads and the
	// estimate's rows stay while the table grows.
	left := x.budget.Limit
	if left > 0 {
		left = max(1, left-x.budget.Used())
	}
	a.plan = a.planFor(est, left)
	if err := a.plan.checkNaive(len(a.keys), len(a.specs), x.budget.Limit, x.budget.Used()); err != nil {
		return err
	}
	a.plan.spillCount(a.maxRows(x), x.budget.Limit)
	a.ownNanos = time.Since(t0) - time.Duration(a.childNanos.Swap(0))

	cfg := a.plan.config(a.settings)
	cfg.Budget, cfg.Hasher, cfg.Pool, cfg.RowsHint = a.budget, x.hasher, x.s.db.pool, max(a.rowsHint, 0)
	a.space.st, a.space.place = a.settings, x.s.db.spillPlace()
	cfg.Spill = a.space.open
	if l := x.budget.Limit; l > 0 {
		cfg.SpillAt, cfg.SpillGroups = spillShare(l), a.plan.spills
	}
	ag, err := agg.New(a.keyTypes(), a.specs, a.plan.loop, cfg)
	if err != nil {
		return err
	}
	a.ag = ag
	st := ag.Stats()
	a.twoPhase, a.perPart = st.SinkPhase == "partition", st.PerPartition
	src := a.source(x)
	if x.hooks != nil && x.hooks.Aggregate != nil {
		src = x.hooks.Aggregate(AggregateInfo{KeyTypes: a.keyTypes(), Specs: a.specs, Config: cfg, Op: a.id}, src)
	}

	return a.run(x, src)
}

// fixedStates reports whether every aggregate of specs keeps a
// fixed-width state of its own, holding no string and no set of
// distinct values that could refer to its input's arrays.
func fixedStates(specs []agg.Spec) bool {
	for _, sp := range specs {
		if sp.Distinct || sp.Kind == agg.CountDistinct {
			return false
		}
		if (sp.Kind == agg.Min || sp.Kind == agg.Max) && sp.In == vec.String {
			return false
		}
	}
	return true
}

// countsOnly reports whether every aggregate of specs is count(*).
func countsOnly(specs []agg.Spec) bool {
	for _, sp := range specs {
		if sp.Kind != agg.CountStar {
			return false
		}
	}
	return len(specs) > 0
}

// planFor plans the aggregation (planAggregate) with the estimate est
// and the memory left of the limit.
func (a *hashAggOp) planFor(est *groupEstimate, left int64) aggPlan {
	p := planAggregate(a.settings, a.cache, a.keyTypes(), a.specs, est, left)
	if a.serial && len(a.keys) == 0 {
		p.threads = 1
	}
	return p
}

// maxRows is the input's rows, or where a filter makes them unknown, the
// rows the statement's scans read at most.
func (a *hashAggOp) maxRows(x *execCtx) int64 {
	if a.rowsHint >= 0 {
		return a.rowsHint
	}
	return x.scanTotal
}

// estimate estimates the groups from the first rows of the input, where
// the plan depends on them; the rows are kept (a.pre), charged until they
// are aggregated.
func (a *hashAggOp) estimate(x *execCtx) (*groupEstimate, error) {
	if !needsEstimate(a.settings, a.keyTypes(), len(a.specs), a.maxRows(x)) {
		return nil, nil
	}
	e := estimator{limit: a.estimateRows}
	if e.limit <= 0 {
		e.limit = estimateRows
	}
	// The rows are held until they are aggregated: under a memory limit
	// they may take an eighth of it, so that a very small limit still
	// leaves the plan (a spilling one, if it must) room to run.
	maxHeld := int64(math.MaxInt64)
	if l := x.budget.Limit; l > 0 {
		maxHeld = l / 8
	}
	capped := false
	// keep holds a morsel the estimate read until it is aggregated, and
	// reports whether the estimate should read on.
	keep := func(b *vec.Batch) (bool, error) {
		in, err := a.input(x, b)
		if err != nil {
			return false, err
		}
		n := liveBytes(in.Keys) + liveBytes(in.Args)
		a.pre = append(a.pre, in)
		if capped {
			return false, nil // read by a helper after the estimate ended
		}
		e.add(x.hasher, in)
		if err := a.budget.Grow(n); err != nil {
			if !errors.Is(err, agg.ErrMemoryLimit) {
				return false, fmt.Errorf("%s: %w", a.label, err)
			}
			// No room to hold this morsel twice over: the estimate
			// ends with it, held (uncharged, its columns mostly
			// views of what the scan charged) until it is aggregated
			// first.
			capped = true
			return false, nil
		}
		a.preHeld += n
		return true, nil
	}
	more := func() bool { return !capped && !e.full() && a.preHeld < maxHeld && !a.scannedEnough(x, &e) }
	if h := a.estimateHelpers(x); h > 0 {
		if err := a.estimateParallel(x, h+1, keep, more); err != nil {
			return nil, err
		}
	} else {
		for more() {
			b, err := a.pull(x, 0)
			if err != nil {
				return nil, err
			}
			if b == nil {
				break
			}
			if b.Len == 0 {
				continue
			}
			if _, err := keep(b); err != nil {
				return nil, err
			}
		}
	}
	seen := x.scanned.Load()
	if capped || a.preHeld >= maxHeld {
		// Cut short by the limit, the sketch may have seen a small part
		// of a row group the scan counts as read: it is taken to be all
		// that was read (more groups, if rows were filtered out, which
		// errs towards the plan that spills).
		seen = min(seen, e.rows)
	}
	return e.estimate(seen, x.scanTotal), nil
}

// estimateHelpers returns how many workers besides worker 0 read the
// estimate's rows: the threads but one, where the input is a scan that
// the workers may read in parallel (a filter that passes few rows has the
// estimate read a sixteenth of the table or more, which on one worker
// left the others idle), and none where per-worker hooks (counters)
// follow the workers' threads or SET group_by asks for a strategy
// that runs on one thread (naive, radix), whose scan stays on it too.
func (a *hashAggOp) estimateHelpers(x *execCtx) int {
	if _, ok := a.children[0].(*scanOp); !ok || a.serial || x.hooks != nil {
		return 0
	}
	if a.estimateReaders > 0 {
		return a.estimateReaders - 1
	}
	if g := a.settings.GroupBy; g == "naive" || g == "radix" {
		return 0
	}
	helpers := max(a.settings.Threads-1, 0)
	// Each reader holds its row group's pages as it reads, and under a
	// memory limit the estimate's rows may take an eighth of it: where the
	// limit leaves less than estimateReaderBytes a reader, one reads.
	if l := x.budget.Limit; l > 0 && l-x.budget.Used() < int64(helpers+1)*estimateReaderBytes {
		return 0
	}
	return helpers
}

// estimateReaderBytes is the memory a limit must leave for each worker
// that reads the group estimate's rows in parallel.
const estimateReaderBytes = 64 << 20

// estimateParallel reads the estimate's rows on workers 0 to
// readers-1, each from a scan cursor of its own,
// handing every morsel to keep on this goroutine until more says the
// estimate has read enough. Every morsel read is kept, including those
// that arrive after: the workers' cursors are left inside their row
// groups, which the aggregation's workers go on with or finish through
// drain (see source).
func (a *hashAggOp) estimateParallel(x *execCtx, readers int, keep func(*vec.Batch) (bool, error), more func() bool) error {
	type morsel struct {
		b   *vec.Batch
		err error
	}
	out := make(chan morsel, readers)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				var b *vec.Batch
				// Not a.pull: the estimate's own time is its wall time
				// less its waits for morsels (below), not less the
				// readers' time, which overlaps.
				err := agg.Safely(w, func() error {
					var err error
					b, err = a.children[0].next(x, w)
					return err
				})
				if b != nil {
					a.stats.rowsIn.Add(int64(b.Len))
				}
				if err != nil || b == nil {
					if err != nil {
						out <- morsel{err: err}
					}
					return
				}
				if b.Len > 0 {
					out <- morsel{b: b}
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	var first error
	reading := more()
	if !reading {
		stop.Store(true)
	}
	for {
		t0 := time.Now()
		m, ok := <-out
		a.childNanos.Add(int64(time.Since(t0)))
		if !ok {
			break
		}
		if m.err != nil {
			first = cmp.Or(first, m.err)
			stop.Store(true)
			continue
		}
		ok, err := keep(m.b)
		if err != nil {
			first = cmp.Or(first, err)
		}
		if reading && (!ok || err != nil || !more()) {
			reading = false
			stop.Store(true)
		}
	}
	a.estimateCursors = readers
	return first
}

// scannedEnough reports whether the estimate, with several threads, has
// read enough of a filtered input: the rows it reads are read on one
// worker before the others start, so after a sixteenth of the scan (at
// least as many rows as the estimate reads), it ends with what passed the filter if that
// is 4096 rows or more, and after a quarter in any case. (A filter that
// passes 0.5% of the rows would otherwise have the estimate read the
// whole input on one worker.)
func (a *hashAggOp) scannedEnough(x *execCtx, e *estimator) bool {
	if a.settings.Threads <= 1 || x.scanTotal <= 0 {
		return false
	}
	seen := x.scanned.Load()
	if seen < max(e.limit, x.scanTotal/16) {
		return false
	}
	return e.rows >= 4096 || seen >= x.scanTotal/4
}

// run sinks the input on the aggregator's workers: with one, on this
// goroutine, now; with several, on goroutines that go on to aggregate the
// partitions ahead of next.
func (a *hashAggOp) run(x *execCtx, src agg.Source) error {
	ag := a.ag
	sink := workerPhase{name: ag.Stats().SinkPhase, run: func(w, slot int) (int64, time.Duration, error) {
		var rows int64
		for {
			if err := x.ctx.Err(); err != nil {
				return rows, 0, err
			}
			select {
			case <-a.quit: // nil with one thread
				return rows, 0, errConsumerDone
			default:
			}
			in, ok, err := src(w)
			if err != nil {
				return rows, 0, err
			}
			if !ok {
				return rows, 0, ag.Flush(slot)
			}
			rows += int64(in.N)
			if err := ag.Sink(slot, in); err != nil {
				return rows, 0, err
			}
		}
	}}
	finalize := func() error {
		a.releasePre() // aggregated by now
		return ag.Finalize(x.ctx)
	}
	threads := ag.Workers()
	if threads == 1 {
		stats, err := x.runWorkers(1, sink)
		a.workers = stats
		if err != nil {
			return err
		}
		t0 := time.Now()
		err = finalize()
		a.ownNanos += time.Since(t0)
		return err
	}
	// The workers go on to aggregate the partitions, each handing its
	// parts to the consumer through parts: with room for one part per
	// worker, they aggregate at most that far ahead of it.
	a.parts, a.quit = make(chan agg.Part, threads), make(chan struct{})
	// After a sink that aggregated (no GROUP BY keys: each worker's
	// partial states), finalize merges and the workers hand out the one
	// group; after radix's partitioning they aggregate the partitions.
	name := "aggregate"
	if !a.twoPhase {
		name = "merge"
	}
	a.finalizePhase = name
	timedFinalize := func() error {
		t0 := time.Now()
		err := finalize()
		a.finalizeTime = time.Since(t0)
		return err
	}
	aggregate := workerPhase{name: name, start: timedFinalize, run: func(w, slot int) (int64, time.Duration, error) {
		var rows int64
		var wait time.Duration
		for {
			p, ok, err := ag.Next(x.ctx, slot)
			if err != nil || !ok {
				return rows, wait, err
			}
			rows += p.Rows
			t0 := time.Now()
			select {
			case a.parts <- p:
				wait += time.Since(t0)
			case <-a.quit:
				a.budget.Grow(-p.Bytes)
				return rows, wait + time.Since(t0), errConsumerDone
			}
		}
	}}
	go func() {
		a.workers, a.runErr = x.runWorkers(threads, sink, aggregate)
		close(a.parts)
	}()
	return nil
}

// collectHeldBytes is the size of the estimate's held rows above which
// the heap is collected once they have all been handed on (see source).
const collectHeldBytes = 16 << 20

// source returns the aggregation's input for worker w: the estimate's
// rows first, then the child's batches, evaluated.
func (a *hashAggOp) source(x *execCtx) agg.Source {
	var nextPre atomic.Int64
	// The estimate read on worker 0: with parallel workers (numbered from
	// 1), the rest of the row group it stopped in is finished through
	// drain, one worker at a time.
	scan, _ := a.children[0].(*scanOp)
	dr, drainable := a.children[0].(drainer)
	// The estimate's cursors that no worker goes on with: worker 0's
	// when parallel workers (1 to n) sink, and those of the estimate's
	// helpers beyond them, or all of the helpers' when worker 0 sinks
	// alone. Their row groups are finished through drain.
	var orphans []int
	if drainable {
		workers := a.ag.Workers()
		if workers > 1 {
			orphans = append(orphans, 0)
		}
		for c := 1; c < a.estimateCursors; c++ {
			if workers == 1 || c > workers {
				orphans = append(orphans, c)
			}
		}
	}
	var leftMu sync.Mutex
	var leftDone atomic.Bool
	leftDone.Store(len(orphans) == 0)
	left := func() (agg.Input, bool, error) {
		leftMu.Lock()
		defer leftMu.Unlock()
		for !leftDone.Load() {
			t0 := time.Now()
			b, err := dr.drain(x, orphans[0])
			a.childNanos.Add(int64(time.Since(t0)))
			if err != nil {
				return agg.Input{}, false, err
			}
			if b == nil {
				orphans = orphans[1:]
				leftDone.Store(len(orphans) == 0)
				continue
			}
			a.stats.rowsIn.Add(int64(b.Len))
			in, err := a.input(x, b)
			return in, err == nil, err
		}
		return agg.Input{}, false, nil
	}
	pre, held := a.pre, a.preHeld
	// An aggregate without keys keeps nothing of its input once it has
	// folded a morsel in: the streams of a scan below convert the next
	// morsel of the same worker into the last one's arrays, rather than
	// allocate a morsel's worth of arrays each time (a quarter of the
	// CPU time of SUM over 100M rows, with the collections they cause).
	// Radix partitioning copies each key and fixed-width partial state
	// into its partitions as it takes a morsel, so a grouped aggregate
	// whose states hold no strings keeps nothing of it either (GROUP BY
	// URL over 20M rows allocated and zeroed 1.4 GB of string arrays).
	// Every strategy copies fixed-width keys into its tables, so with
	// those a one-phase aggregate keeps nothing of a morsel either.
	keyless := len(a.keys) == 0 && len(pre) == 0 && agg.GlobalWorkers(a.specs, 2) > 1
	copied := a.twoPhase || !slices.Contains(a.keyTypes(), vec.String)
	recycle := scan != nil && x.hooks == nil && (keyless || len(a.keys) > 0 && copied && fixedStates(a.specs))
	var lastMu sync.Mutex
	last := map[int]*vec.Batch{}
	return func(w int) (agg.Input, bool, error) {
		if recycle {
			// Worker w folded its last morsel in before it asked again.
			lastMu.Lock()
			prev := last[w]
			delete(last, w)
			lastMu.Unlock()
			if prev != nil {
				scan.recycle(w, prev)
			}
		}
		i := int(nextPre.Add(1) - 1)
		if i == len(pre) && held >= collectHeldBytes {
			// The estimate's rows were most of the live heap when the
			// collector last set its goal (twice the live heap): left
			// alone, the heap would grow to that goal with garbage while
			// the partitions grow, and both peak together. Collected
			// once they are gone, the goal falls to what the phase holds.
			runtime.GC()
		}
		if i < len(pre) {
			// Handed on once, the morsel is dropped here, so that the
			// collector may take it as soon as the worker is done with it
			// rather than at the end of the phase.
			in := pre[i]
			pre[i] = agg.Input{}
			return in, true, nil
		}
		if !leftDone.Load() {
			if in, ok, err := left(); ok || err != nil {
				return in, ok, err
			}
		}
		for {
			b, err := a.pull(x, w)
			if err != nil || b == nil {
				return agg.Input{}, false, err
			}
			if b.Len == 0 {
				continue
			}
			in, err := a.input(x, b)
			if err != nil {
				return agg.Input{}, false, err
			}
			if recycle {
				lastMu.Lock()
				last[w] = b
				lastMu.Unlock()
			}
			return in, true, nil
		}
	}
}

// drainer is an input that a worker may ask, under a lock, for the rest
// of the morsel another worker (from) stopped in: a scan, or what passes
// its rows on (sideAggOp).
type drainer interface {
	drain(x *execCtx, from int) (*vec.Batch, error)
}

// nextPart returns the aggregator's next part: from the workers, or
// computed here with one thread.
func (a *hashAggOp) nextPart(x *execCtx) (agg.Part, bool, error) {
	if a.parts != nil {
		p, ok := <-a.parts
		if !ok {
			return agg.Part{}, false, a.runErr
		}
		return p, true, nil
	}
	if !a.twoPhase {
		t0 := time.Now()
		p, ok, err := a.ag.Next(x.ctx, 0)
		a.ownNanos += time.Since(t0)
		return p, ok, err
	}
	// The "aggregate" phase of radix, bracketed from the first part to
	// the last.
	if !a.nextBegun {
		a.nextBegun = true
		x.phaseStart(0, "aggregate")
	}
	t0 := time.Now()
	p, ok, err := a.ag.Next(x.ctx, 0)
	a.nextTime += time.Since(t0)
	a.nextRows += p.Rows
	if !ok || err != nil {
		a.endNext(x)
	}
	return p, ok, err
}

// endNext ends the "aggregate" phase that runs on this goroutine.
func (a *hashAggOp) endNext(x *execCtx) {
	if a.nextBegun {
		a.nextBegun = false
		x.phaseEnd(0, "aggregate")
		a.workers = append(a.workers, WorkerStat{Worker: 0, Phase: "aggregate", Rows: a.nextRows, Time: a.nextTime})
	}
}

// finish records what the aggregation did, once the groups were all
// handed out or the consumer wanted no more, and releases its memory but
// the part handed out last.
func (a *hashAggOp) finish(x *execCtx) {
	if a.finished || a.ag == nil {
		return
	}
	a.finished = true
	if a.parts != nil {
		close(a.quit) // workers still aggregating stop
		for p := range a.parts {
			a.budget.Grow(-p.Bytes)
		}
	}
	a.endNext(x)
	st := a.ag.Stats()
	if !st.Complete {
		a.stopped = true
	}
	a.groups, a.tableSlots = st.Groups, st.TableSlots
	if !a.stopped {
		a.preAgg = st.PreAgg
		if a.settings.HugePages && len(a.keys) > 0 {
			a.hugeNote = x.s.db.pool.HugePageNote()
		}
	}
	if s, ok := a.ag.(interface{ SpillStats() agg.SpillStats }); ok {
		a.spilled = s.SpillStats()
	}
	a.ag.Close()
	a.space.close()
	a.recordPhases(a.workers)
	// The operator's own time: its workers' time less the time they
	// spent pulling input.
	own := a.ownNanos + a.finalizeTime
	for _, w := range a.workers {
		own += w.Time
	}
	own -= time.Duration(a.childNanos.Load())
	a.stats.nanos.Add(int64(max(own, 0)))
}

// releasePre releases the estimate's rows.
func (a *hashAggOp) releasePre() {
	if a.pre != nil || a.preHeld != 0 {
		a.budget.Grow(-a.preHeld)
		a.pre, a.preHeld = nil, 0
	}
}

// recordPhases turns the workers' phase statistics into the operator's
// phases (rows summed, the slowest worker's time: workers run in parallel)
// and per-worker lines.
func (a *hashAggOp) recordPhases(stats []WorkerStat) {
	a.stats.mu.Lock()
	defer a.stats.mu.Unlock()
	idx := map[string]int{}
	for _, st := range stats {
		a.stats.workers = append(a.stats.workers, st)
		i, ok := idx[st.Phase]
		if !ok {
			i = len(a.stats.phases)
			idx[st.Phase] = i
			a.stats.phases = append(a.stats.phases, PhaseStat{Name: st.Phase})
		}
		p := &a.stats.phases[i]
		p.Rows += st.Rows
		p.Time = max(p.Time, st.Time)
	}
	if i, ok := idx[a.finalizePhase]; ok {
		a.stats.phases[i].Time += a.finalizeTime
	}
}

func (a *hashAggOp) close(x *execCtx) {
	a.finish(x)
	a.space.close()
	if a.budget != nil {
		a.releasePre()
		a.budget.Grow(-a.held)
	}
	a.held = 0
}
