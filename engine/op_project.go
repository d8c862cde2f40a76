package engine

import (
	"fmt"
	"sync"
	"time"

	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// projectOp evaluates the select list (and hidden ORDER BY keys) over each
// batch of its input.
//
// The vectors it builds stay charged to the statement's budget after it
// returns them, until the worker that asked for them asks for the next
// batch (or the query ends): its consumer is then done with them, or has
// charged what it kept itself (a sort, a subquery, the result).
type projectOp struct {
	opBase
	exprs []expr.Expr
	names []string

	mu   sync.Mutex
	held map[int]int64 // per worker: the charge of the batch it was handed last
}

// handOff releases the charge of the batch worker w was handed last and
// records n as that of the one it is handed now.
func (p *projectOp) handOff(x *execCtx, w int, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	x.release(p, p.held[w])
	if n == 0 {
		delete(p.held, w)
		return
	}
	if p.held == nil {
		p.held = map[int]int64{}
	}
	p.held[w] = n
}

func (p *projectOp) close(x *execCtx) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w, n := range p.held {
		x.release(p, n)
		delete(p.held, w)
	}
}

func (p *projectOp) detail() []string { return p.names }

func (p *projectOp) next(x *execCtx, w int) (*vec.Batch, error) {
	p.handOff(x, w, 0)
	b, err := p.children[0].next(x, w)
	if err != nil || b == nil {
		return nil, err
	}
	t0 := time.Now()
	defer p.stats.since(t0)
	p.stats.rowsIn.Add(int64(b.Len))
	out := &vec.Batch{Vecs: make([]*vec.Vector, len(p.exprs)), Len: b.Len}
	var held int64 // the charge of out's vectors
	for i, e := range p.exprs {
		if err := x.ctx.Err(); err != nil {
			x.release(p, held)
			return nil, err
		}
		v, n, err := evalBounded(x, p, e, b)
		if err != nil {
			x.release(p, held)
			return nil, err
		}
		held += n
		out.Vecs[i] = v
		if n == 0 && !isColumnRef(e) {
			n = vecBytes([]*vec.Vector{v})
			if err := x.grow(p, n); err != nil {
				x.release(p, held)
				return nil, fmt.Errorf("evaluating %s: %w", p.names[i], err)
			}
			held += n
		}
	}
	p.handOff(x, w, held)
	p.stats.rowsOut.Add(int64(b.Len))
	return out, nil
}

func isColumnRef(e expr.Expr) bool { _, ok := e.(*expr.ColumnRef); return ok }
