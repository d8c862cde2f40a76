package engine

import (
	"sync/atomic"
	"time"

	"cachebook/engine/vec"
)

// subqueryOp is a subquery of the FROM clause. It runs the subquery to the
// end before the outer query starts (prepare), on the statement's own
// goroutine, so that the subquery's workers and the outer query's never run
// at once; then it passes on the subquery's visible columns, to any number
// of workers.
type subqueryOp struct {
	opBase
	alias    string
	nVisible int

	batches []*vec.Batch
	pos     atomic.Int64
	held    int64
}

func (s *subqueryOp) detail() []string { return []string{"alias: " + s.alias} }

// prepare runs the subquery and keeps its rows, charged to the budget.
func (s *subqueryOp) prepare(x *execCtx) error {
	for {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		b, err := s.children[0].next(x, 0)
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		t0 := time.Now()
		s.stats.rowsIn.Add(int64(b.Len))
		out := &vec.Batch{Vecs: b.Vecs[:s.nVisible], Len: b.Len}
		n := liveBytes(out.Vecs)
		if err := x.grow(s, n); err != nil {
			return err
		}
		s.held += n
		s.batches = append(s.batches, out)
		s.stats.since(t0)
	}
}

func (s *subqueryOp) next(x *execCtx, w int) (*vec.Batch, error) {
	t0 := time.Now()
	defer s.stats.since(t0)
	i := int(s.pos.Add(1) - 1)
	if i >= len(s.batches) {
		return nil, nil
	}
	s.stats.rowsOut.Add(int64(s.batches[i].Len))
	return s.batches[i], nil
}

func (s *subqueryOp) close(x *execCtx) {
	x.release(s, s.held)
	s.held = 0
	s.batches = nil
}
