package engine

import (
	"fmt"
	"time"

	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

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
