package engine

import (
	"sync"
	"time"

	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// filterOp keeps the rows of its input for which a predicate is true. It
// runs as FILTER over inputs that are not table scans (a table scan
// evaluates its WHERE itself) and as HAVING over an aggregation's groups.
type filterOp struct {
	opBase
	pred expr.Expr

	// filter is pred compiled for selection, once the plan is final;
	// scratch holds the workers' buffers between batches.
	once    sync.Once
	filter  *expr.Filter
	scratch sync.Pool
}

func (f *filterOp) detail() []string { return []string{f.pred.String()} }

func (f *filterOp) next(x *execCtx, w int) (*vec.Batch, error) {
	child := f.children[0]
	for {
		b, err := child.next(x, w)
		if err != nil || b == nil {
			return nil, err
		}
		t0 := time.Now()
		f.stats.rowsIn.Add(int64(b.Len))
		f.once.Do(func() { f.filter = expr.NewFilter(f.pred) })
		sc, _ := f.scratch.Get().(*expr.FilterScratch)
		if sc == nil {
			sc = &expr.FilterScratch{}
		}
		out, err := filterBatch(f.filter, b, sc)
		f.scratch.Put(sc)
		f.stats.since(t0)
		if err != nil {
			return nil, err
		}
		if out.Len == 0 {
			continue
		}
		f.stats.rowsOut.Add(int64(out.Len))
		return out, nil
	}
}

// filterBatch returns the rows of b for which f is true, using sc's
// memory for the selection.
func filterBatch(f *expr.Filter, b *vec.Batch, sc *expr.FilterScratch) (*vec.Batch, error) {
	sel, err := f.Select(b, sc)
	if err != nil {
		return nil, err
	}
	if len(sel) == b.Len {
		return b, nil
	}
	out := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
	for i, v := range b.Vecs {
		out.Vecs[i] = gather(v, sel)
	}
	return out, nil
}
