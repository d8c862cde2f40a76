package engine

import (
	"errors"
	"fmt"
	"iter"
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
// each batch of its input and hands them to engine/agg, with the strategy
// strategy.go chooses. It is a pipeline breaker: it reads all its input
// before it returns a group. Its groups come in batches of the keys, then
// one column per aggregate. Radix and parallel (but for the tuned integer
// count loop) return each partition's groups as soon as it is aggregated
// (agg.Config.Emit), so that a consumer done with them (an aggregate over
// a subquery's groups, a top-N, a LIMIT) lets their memory serve the next
// partitions'; the others return theirs at the end.
//
// The aggregation runs as a coroutine (iter.Pull) of the goroutine that
// calls next: it stops at each batch until next is called again. next
// and close must be called from that one goroutine (the statement's, see
// operator), as the coroutine keeps to its OS thread when the statement
// is locked to one for its counters.
type hashAggOp struct {
	opBase
	keys      []expr.Expr
	keyNames  []string
	args      []expr.Expr // per spec; nil for count(*)
	specs     []agg.Spec
	aggNames  []string
	rewritten int   // sums rewritten by sum_rewrite
	rowsHint  int64 // input rows when known before running (-1: unknown)
	// estimateRows is how many input rows the group estimate sketches
	// (0: the default, estimateRows).
	estimateRows int64

	settings Settings
	cache    CacheSizes

	ran     bool
	pull    func() (*vec.Batch, error, bool) // the running aggregation's next batch
	stop    func()                           // ends the running aggregation
	stopped bool                             // the consumer wanted no more groups
	// The groups handed on partition by partition (cfg.Emit): batches,
	// their bytes, and the most bytes held at once.
	outBatches       int
	outBytes, outMax int64
	choice           strategyChoice
	est              *groupEstimate
	groups           int
	tableSlots       int
	preAgg           agg.PreAggStats
	preAggOff        string // why pre-aggregation was turned off, for EXPLAIN
	hugeNote         string // what the engine's pool measured of fresh huge pages
	held             int64
}

func (a *hashAggOp) keyTypes() []vec.Type {
	kt := make([]vec.Type, len(a.keys))
	for i, k := range a.keys {
		kt[i] = k.Type()
	}
	return kt
}

// loop names the inner loop engine/agg runs for this aggregation, which
// EXPLAIN shows so that learners see which code ran.
func (a *hashAggOp) loop() string {
	if len(a.keys) == 0 {
		return "global aggregate states (one group)"
	}
	if agg.CountFast(a.keyTypes(), a.specs) {
		if a.settings.GenericAgg {
			return "generic hash table and aggregate states (tuned integer count(*) loop disabled by SET generic_agg)"
		}
		return "tuned integer-key count(*) loop (one 16-byte slot per group, no state objects)"
	}
	return "generic hash table and aggregate states"
}

func (a *hashAggOp) detail() []string {
	var d []string
	if len(a.keys) > 0 {
		d = append(d, "keys: "+strings.Join(a.keyNames, ", "))
	}
	if len(a.aggNames) > 0 {
		d = append(d, "aggregates: "+strings.Join(a.aggNames, ", "))
	}
	if a.rewritten > 0 {
		d = append(d, fmt.Sprintf("sum_rewrite: %d sum(x + c) rewritten to sum(x) + c * count(x)", a.rewritten))
	}
	if len(a.keys) > 0 || a.ran {
		c := a.choice
		if !a.ran {
			c = chooseStrategy(a.settings, a.cache, len(a.keys), len(a.specs), nil, 0)
		}
		if c.name == "auto" {
			d = append(d, "strategy: auto ("+c.why+")")
		} else {
			d = append(d, "strategy: "+c.describe())
		}
	}
	d = append(d, "loop: "+a.loop())
	switch {
	case a.stopped:
		d = append(d, fmt.Sprintf("groups: stopped after returning %d, as its consumer needed no more", a.stats.rowsOut.Load()))
	case a.ran && len(a.keys) > 0:
		d = append(d, fmt.Sprintf("groups: %d, largest table: %d slots", a.groups, a.tableSlots))
	}
	if a.outBatches > 0 {
		d = append(d, fmt.Sprintf("output: %d batches of %s, handed on as each partition was aggregated: at most %s held at once",
			a.outBatches, agg.FormatBytes(a.outBytes), agg.FormatBytes(a.outMax)))
	}
	if line := a.preAgg.Describe(); line != "" {
		d = append(d, "pre-aggregation: "+line)
	}
	if a.preAggOff != "" {
		d = append(d, "pre-aggregation: "+a.preAggOff)
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

// errConsumerDone ends an aggregation whose consumer closed it before its
// last group.
var errConsumerDone = errors.New("the consumer of the groups is done")

func (a *hashAggOp) next(x *execCtx, w int) (*vec.Batch, error) {
	if a.pull == nil {
		if a.ran {
			return nil, nil
		}
		a.ran = true
		a.pull, a.stop = iter.Pull2(func(yield func(*vec.Batch, error) bool) {
			if err := a.run(x, yield); err != nil && !errors.Is(err, errConsumerDone) {
				yield(nil, err)
			}
		})
	}
	b, err, ok := a.pull()
	if !ok {
		return nil, nil
	}
	return b, err
}

// run aggregates the input, yielding the groups batch by batch.
func (a *hashAggOp) run(x *execCtx, yield func(*vec.Batch, error) bool) error {
	child := a.children[0]
	var childNanos atomic.Int64
	pull := func(w int) (*vec.Batch, error) {
		t0 := time.Now()
		b, err := child.next(x, w)
		childNanos.Add(int64(time.Since(t0)))
		if b != nil {
			a.stats.rowsIn.Add(int64(b.Len))
		}
		return b, err
	}
	start := time.Now()

	// The estimate sketches the first rows; they are kept and aggregated
	// first, charged until they are.
	var pre []agg.Input
	var preHeld int64
	releasePre := func() {
		x.release(a, preHeld)
		pre, preHeld = nil, 0
	}
	defer releasePre()
	if needsEstimate(a.settings, len(a.keys)) {
		limit := a.estimateRows
		if limit <= 0 {
			limit = estimateRows
		}
		var sk hll
		var rows, varBytes int64
		var half groupSample // the sketch's count at about half the rows
		var hashes []uint64
		for rows < limit {
			b, err := pull(0)
			if err != nil {
				return err
			}
			if b == nil {
				break
			}
			if b.Len == 0 {
				continue
			}
			in, err := a.input(x, b)
			if err != nil {
				return err
			}
			if err := x.grow(a, liveBytes(in.Keys)+liveBytes(in.Args)); err != nil {
				return err
			}
			preHeld += liveBytes(in.Keys) + liveBytes(in.Args)
			pre = append(pre, in)
			if cap(hashes) < b.Len {
				hashes = make([]uint64, b.Len)
			}
			x.hasher.Hash(in.Keys, b.Len, hashes)
			for _, h := range hashes[:b.Len] {
				sk.add(h)
			}
			varBytes += stringBytes(in.Keys)
			if rows < limit/2 && rows+int64(b.Len) >= limit/2 {
				half = groupSample{groups: sk.estimate(), rows: rows + int64(b.Len)}
			}
			rows += int64(b.Len)
		}
		total, seen := x.scanTotal, x.scanned.Load()
		full := groupSample{groups: sk.estimate(), rows: rows}
		a.est = &groupEstimate{groups: scaleEstimate(half, full, seen, total), rows: rows}
		if rows > 0 {
			a.est.keyBytes = varBytes / rows
		}
		if seen > 0 {
			a.est.input = int64(float64(rows) * float64(max(total, seen)) / float64(seen))
		}
	}
	a.choice = chooseStrategy(a.settings, a.cache, len(a.keys), len(a.specs), a.est, x.budget.Limit)
	// The estimate ran here; its input's time is the children's.
	estimateOwn := time.Since(start) - time.Duration(childNanos.Swap(0))
	start = time.Now()

	var nextPre atomic.Int64
	// The estimate read on worker 0: with parallel workers (numbered from
	// 1), the rest of the row group it stopped in is finished through
	// drain, one worker at a time.
	scan, drainable := child.(*scanOp)
	var leftMu sync.Mutex
	var leftDone atomic.Bool
	left := func() (agg.Input, bool, error) {
		leftMu.Lock()
		defer leftMu.Unlock()
		if leftDone.Load() {
			return agg.Input{}, false, nil
		}
		t0 := time.Now()
		b, err := scan.drain(x, 0)
		childNanos.Add(int64(time.Since(t0)))
		if err != nil {
			return agg.Input{}, false, err
		}
		if b == nil {
			leftDone.Store(true)
			return agg.Input{}, false, nil
		}
		a.stats.rowsIn.Add(int64(b.Len))
		in, err := a.input(x, b)
		return in, err == nil, err
	}
	src := func(w int) (agg.Input, bool, error) {
		if i := int(nextPre.Add(1) - 1); i < len(pre) {
			return pre[i], true, nil
		}
		if drainable && w != 0 && !leftDone.Load() {
			if in, ok, err := left(); ok || err != nil {
				return in, ok, err
			}
		}
		for {
			b, err := pull(w)
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
			return in, true, nil
		}
	}
	// The aggregation's tables and partitions are charged to the
	// statement's budget through the operator's own, so that its
	// statistics show their peak.
	budget := &agg.Budget{Parent: x.budget, Observe: a.stats.addMem}
	cfg := agg.Config{Threads: a.choice.threads, RadixBits: a.choice.bits, Budget: budget, Hasher: x.hasher,
		HugePages: a.settings.HugePages, Pool: x.s.db.pool, RowsHint: max(a.rowsHint, 0), Generic: a.settings.GenericAgg}
	if !a.settings.PreAggregate {
		cfg.PreAggGroups = -1
	}
	if a.est != nil {
		cfg.GroupsHint = a.est.groups
	}
	// Partitions' groups are returned piece by piece, not copied into one
	// batch (for GROUP BY URL over 20M rows that copy was 0.66 s of the
	// query's 4.5 s of CPU time).
	cfg.Parts = true
	if a.choice.name != "naive" {
		cfg.Strategy = agg.Radix
	}
	if h := x.hooks; h != nil {
		cfg.Observer = agg.Observer{LockThreads: h.LockThreads, WorkerStart: h.WorkerStart,
			WorkerStop: h.WorkerStop, PhaseStart: h.PhaseStart, PhaseEnd: h.PhaseEnd}
	}
	if x.hooks != nil && x.hooks.Aggregate != nil {
		src = x.hooks.Aggregate(AggregateInfo{KeyTypes: a.keyTypes(), Specs: a.specs, Config: cfg, Op: a.id}, src)
	}
	// Each partition's groups as soon as they are aggregated: the batch
	// is charged until the next comes (the consumer has copied, charged
	// or dropped it by then) or the operator closes.
	var handing time.Duration // suspended in yield: the consumer's time
	cfg.Emit = func(p agg.Part) error {
		b := partBatch(p)
		n := vecBytes(b.Vecs)
		if err := x.grow(a, n); err != nil {
			return err
		}
		releasePre() // the estimate's rows are aggregated by now
		x.release(a, a.held)
		a.held = n
		a.outBatches++
		a.outBytes += n
		a.outMax = max(a.outMax, n)
		a.stats.rowsOut.Add(int64(p.Groups))
		t0 := time.Now()
		ok := yield(b, nil)
		handing += time.Since(t0)
		if !ok {
			return errConsumerDone
		}
		return nil
	}
	out, err := agg.Aggregate(x.ctx, a.keyTypes(), a.specs, cfg, src)
	if errors.Is(err, errConsumerDone) {
		a.stopped = true
		return err
	}
	releasePre()
	if err != nil {
		return err
	}
	a.groups, a.tableSlots, a.preAgg = out.Groups, out.TableSlots, out.PreAgg
	if a.settings.HugePages && len(a.keys) > 0 {
		a.hugeNote = x.s.db.pool.HugePageNote()
	}
	a.recordPhases(out.Stats)
	// The operator's own time: its workers' time (or the wall time when
	// it ran on this goroutine) less the time they spent pulling input.
	own := time.Since(start) - handing
	if a.choice.threads > 1 {
		own = 0
		for _, w := range a.stats.workers {
			own += w.Time
		}
	}
	own += estimateOwn - time.Duration(childNanos.Load())
	a.stats.nanos.Add(int64(max(own, 0)))
	if out.Emitted {
		return nil // every group went through cfg.Emit
	}
	// The output of the strategies that return it at the end: charged
	// until the query is done with it.
	parts := out.Parts
	if parts == nil {
		parts = []agg.Part{{Keys: out.Keys, Aggs: out.Aggs, Groups: out.Groups}}
	}
	var held int64
	batches := make([]*vec.Batch, 0, len(parts))
	for _, p := range parts {
		b := partBatch(p)
		held += vecBytes(b.Vecs)
		batches = append(batches, b)
	}
	err = x.grow(a, held)
	budget.Grow(-out.KeyBytes) // the tables' charge for the keys, now the output's
	if err != nil {
		return err
	}
	a.held = held
	a.stats.rowsOut.Add(int64(out.Groups))
	for _, b := range batches {
		if !yield(b, nil) {
			return nil
		}
	}
	return nil
}

// partBatch is the batch of a piece of the groups: its keys, then its
// aggregates.
func partBatch(p agg.Part) *vec.Batch {
	vs := append(append(make([]*vec.Vector, 0, len(p.Keys)+len(p.Aggs)), p.Keys...), p.Aggs...)
	return &vec.Batch{Vecs: vs, Len: p.Groups}
}

// recordPhases turns the workers' phase statistics into the operator's
// phases (rows summed, the slowest worker's time: workers run in parallel)
// and per-worker lines.
func (a *hashAggOp) recordPhases(stats []agg.WorkerStat) {
	a.stats.mu.Lock()
	defer a.stats.mu.Unlock()
	idx := map[string]int{}
	for _, st := range stats {
		a.stats.workers = append(a.stats.workers, WorkerStat{Worker: st.Worker, Phase: st.Phase, Rows: st.Rows, Time: st.Time})
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
}

func (a *hashAggOp) close(x *execCtx) {
	if a.stop != nil {
		a.stop() // an aggregation still running returns, freeing its memory
		a.pull, a.stop = nil, nil
	}
	x.release(a, a.held)
	a.held = 0
}
