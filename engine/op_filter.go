package engine

import (
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
		out, err := filterBatch(f.pred, b)
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

// filterBatch returns the rows of b for which pred is true.
func filterBatch(pred expr.Expr, b *vec.Batch) (*vec.Batch, error) {
	p, err := pred.Eval(b)
	if err != nil {
		return nil, err
	}
	sel := expr.Select(p, nil)
	if len(sel) == b.Len {
		return b, nil
	}
	out := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
	for i, v := range b.Vecs {
		out.Vecs[i] = gather(v, sel)
	}
	return out, nil
}
