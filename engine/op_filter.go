package engine

import (
	"fmt"
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

// projectOp evaluates the select list (and hidden ORDER BY keys) over each
// batch of its input.
type projectOp struct {
	opBase
	exprs []expr.Expr
	names []string
}

func (p *projectOp) detail() []string { return p.names }

func (p *projectOp) next(x *execCtx, w int) (*vec.Batch, error) {
	b, err := p.children[0].next(x, w)
	if err != nil || b == nil {
		return nil, err
	}
	t0 := time.Now()
	defer p.stats.since(t0)
	p.stats.rowsIn.Add(int64(b.Len))
	out := &vec.Batch{Vecs: make([]*vec.Vector, len(p.exprs)), Len: b.Len}
	var temp int64
	for i, e := range p.exprs {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
		v, err := evalBounded(x, p, e, b)
		if err != nil {
			return nil, err
		}
		out.Vecs[i] = v
		if !isColumnRef(e) {
			temp += vecBytes([]*vec.Vector{v})
			if err := x.fits(p, temp); err != nil {
				return nil, fmt.Errorf("evaluating %s: %w", p.names[i], err)
			}
		}
	}
	p.stats.rowsOut.Add(int64(b.Len))
	return out, nil
}

func isColumnRef(e expr.Expr) bool { _, ok := e.(*expr.ColumnRef); return ok }

// limitOp passes on rows offset to offset+limit of its input and stops
// pulling once it has them: a LIMIT without ORDER BY stops the scan.
type limitOp struct {
	opBase
	limit, offset int64 // limit -1: none
	seen          int64 // rows of the input consumed (skipped or passed)
}

func (l *limitOp) detail() []string {
	if l.limit < 0 {
		return []string{fmt.Sprintf("offset %d", l.offset)}
	}
	return []string{fmt.Sprintf("limit %d offset %d", l.limit, l.offset)}
}

func (l *limitOp) next(x *execCtx, w int) (*vec.Batch, error) {
	for {
		if l.limit >= 0 && l.seen >= l.offset+l.limit {
			return nil, nil
		}
		b, err := l.children[0].next(x, w)
		if err != nil || b == nil {
			return nil, err
		}
		t0 := time.Now()
		l.stats.rowsIn.Add(int64(b.Len))
		lo := max(0, l.offset-l.seen)
		hi := int64(b.Len)
		if l.limit >= 0 {
			hi = min(hi, l.offset+l.limit-l.seen)
		}
		l.seen += int64(b.Len)
		if lo >= hi {
			l.stats.since(t0)
			continue
		}
		out := b
		if lo > 0 || hi < int64(b.Len) {
			out = &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: int(hi - lo)}
			for i, v := range b.Vecs {
				out.Vecs[i] = sliceVec(v, int(lo), int(hi))
			}
		}
		l.stats.rowsOut.Add(int64(out.Len))
		l.stats.since(t0)
		return out, nil
	}
}
