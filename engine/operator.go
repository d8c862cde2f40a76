package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/storage"
	"cachebook/engine/vec"
)

// operator is one physical operator of a query. The planner builds a tree
// of them; execution pulls batches from the root, each operator pulling
// from its children; EXPLAIN prints the tree, and EXPLAIN ANALYZE prints
// the same tree after it ran, with the statistics each operator kept for
// itself. Nothing finds an operator by its label.
//
// The operators below a hash aggregate (scan, filter, projection,
// subquery) are called by several workers at once and must be safe for
// concurrent use; the others are called by the statement's goroutine
// alone.
type operator interface {
	// base returns the operator's label, children and statistics.
	base() *opBase
	// detail returns the lines EXPLAIN prints under the label; after the
	// operator ran they may say what it did (the strategy it chose, the
	// row groups it skipped).
	detail() []string
	// next returns the operator's next batch for worker w, or nil when it
	// has no more rows.
	next(x *execCtx, w int) (*vec.Batch, error)
}

// preparer is implemented by operators that must do work before the tree
// runs (a subquery runs to the end first).
type preparer interface {
	prepare(x *execCtx) error
}

// closer is implemented by operators that hold resources (files, memory)
// until the query is done.
type closer interface {
	close(x *execCtx)
}

// opBase is what every operator has: its label, its children and its
// statistics.
type opBase struct {
	label    string
	children []operator
	stats    opStats
	// id identifies the operator within its session once it has run
	// (PlanNode.Op, AggregateInfo.Op); 0 before.
	id uint64
}

func (b *opBase) base() *opBase { return b }

// opStats are one operator's measurements. Rows and times are updated
// atomically, from any worker.
type opStats struct {
	rowsIn  atomic.Int64
	rowsOut atomic.Int64
	nanos   atomic.Int64 // time spent in the operator itself, children excluded
	mem     atomic.Int64 // bytes the operator holds now
	memPeak atomic.Int64

	mu      sync.Mutex
	phases  []PhaseStat
	workers []WorkerStat
}

// since adds the time since t0 to the operator's own time.
func (s *opStats) since(t0 time.Time) { s.nanos.Add(int64(time.Since(t0))) }

func (s *opStats) addMem(n int64) {
	m := s.mem.Add(n)
	for {
		p := s.memPeak.Load()
		if m <= p || s.memPeak.CompareAndSwap(p, m) {
			return
		}
	}
}

// execCtx carries what one statement's execution needs.
type execCtx struct {
	ctx    context.Context
	hooks  *Hooks
	budget *agg.Budget
	hasher *agg.Hasher
	s      *Session

	scanTotal int64        // rows the query's scans will read at most
	scanned   atomic.Int64 // rows scanned so far
}

func (x *execCtx) phaseStart(w int, name string) {
	if x.hooks != nil && x.hooks.PhaseStart != nil {
		x.hooks.PhaseStart(w, name)
	}
}

func (x *execCtx) phaseEnd(w int, name string) {
	if x.hooks != nil && x.hooks.PhaseEnd != nil {
		x.hooks.PhaseEnd(w, name)
	}
}

// progress records n more rows scanned.
func (x *execCtx) progress(n int) {
	d := x.scanned.Add(int64(n))
	if x.hooks != nil && x.hooks.Progress != nil {
		x.hooks.Progress(d, x.scanTotal)
	}
}

// grow charges n bytes held by op to the statement's memory budget; it
// fails with ErrMemoryLimit, charging nothing, if the budget is exceeded.
func (x *execCtx) grow(op operator, n int64) error {
	if n <= 0 {
		return nil
	}
	if err := x.budget.Grow(n); err != nil {
		return fmt.Errorf("%s: %w", op.base().label, err)
	}
	op.base().stats.addMem(n)
	return nil
}

// release returns n bytes charged by grow.
func (x *execCtx) release(op operator, n int64) {
	if n <= 0 {
		return
	}
	x.budget.Grow(-n)
	op.base().stats.addMem(-n)
}

// fits checks that n more bytes of temporaries fit in the budget without
// keeping them charged: expression results live only until the next morsel.
func (x *execCtx) fits(op operator, n int64) error {
	if err := x.grow(op, n); err != nil {
		return err
	}
	x.release(op, n)
	return nil
}

// vecBytes is the memory held by vs.
func vecBytes(vs []*vec.Vector) int64 { return storage.VectorBytes(vs...) }

// walk calls f for op and every operator below it, parents first.
func walk(op operator, f func(operator)) {
	f(op)
	for _, c := range op.base().children {
		walk(c, f)
	}
}

// prepareAll prepares the operators of the tree, children first.
func prepareAll(x *execCtx, op operator) error {
	for _, c := range op.base().children {
		if err := prepareAll(x, c); err != nil {
			return err
		}
	}
	if p, ok := op.(preparer); ok {
		return p.prepare(x)
	}
	return nil
}

// closeAll closes every operator of the tree.
func closeAll(x *execCtx, root operator) {
	walk(root, func(op operator) {
		if c, ok := op.(closer); ok {
			c.close(x)
		}
	})
}

// collect runs the tree under root and returns its first n columns. A
// single batch is returned as it is (the columns of an aggregation's
// output are not copied). Several are kept until the last has come, then
// copied once into vectors sized for all of them: appending batch by batch
// would grow the result by doubling, copying its rows again at each step
// and touching up to twice the fresh memory it needs (5.5M URLs grouped
// over 20M rows: most of a cold query's page faults). The batches and then
// the copy are charged to the budget.
func collect(x *execCtx, root operator, cols []vec.Column) ([]*vec.Vector, int, error) {
	defer closeAll(x, root)
	if err := prepareAll(x, root); err != nil {
		return nil, 0, err
	}
	var batches []*vec.Batch
	n := 0
	var held int64
	defer func() { x.budget.Grow(-held) }()
	for {
		if err := x.ctx.Err(); err != nil {
			return nil, 0, err
		}
		b, err := root.next(x, 0)
		if err != nil {
			return nil, 0, err
		}
		if b == nil {
			break
		}
		if b.Len == 0 {
			continue
		}
		batches = append(batches, b)
		n += b.Len
		if len(batches) == 1 {
			continue // returned as it is if it stays the only one
		}
		if len(batches) == 2 {
			if err := charge(x, &held, liveBytes(batches[0].Vecs[:len(cols)])); err != nil {
				return nil, 0, err
			}
		}
		if err := charge(x, &held, liveBytes(b.Vecs[:len(cols)])); err != nil {
			return nil, 0, err
		}
	}
	switch len(batches) {
	case 0:
		out := make([]*vec.Vector, len(cols))
		for i, c := range cols {
			out[i] = emptyVec(c.Type)
		}
		return out, 0, nil
	case 1:
		return batches[0].Vecs[:len(cols)], n, nil
	}
	// The copy, while the batches are still held.
	if err := charge(x, &held, held); err != nil {
		return nil, 0, err
	}
	out := make([]*vec.Vector, len(cols))
	parts := make([]*vec.Vector, len(batches))
	for i, c := range cols {
		for k, b := range batches {
			parts[k] = b.Vecs[i]
		}
		v, err := vec.Concat(c.Type, parts)
		if err != nil {
			return nil, 0, fmt.Errorf("result column %s: %w", c.Name, err)
		}
		out[i] = v
	}
	return out, n, nil
}

// charge adds n bytes to the result's charge held, failing with the
// budget's error when they do not fit.
func charge(x *execCtx, held *int64, n int64) error {
	if err := x.budget.Grow(n); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	*held += n
	return nil
}
