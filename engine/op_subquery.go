package engine

import (
	"sync/atomic"
	"time"

	"cachebook/engine/vec"
)

// subqueryOp is a subquery of the FROM clause. When the outer query reads
// its rows on the statement's goroutine alone (stream: no GROUP BY keys
// over it, which may run parallel workers), it passes on the subquery's
// visible columns batch by batch as the outer query asks for them, holding
// none: an aggregate over a GROUP BY's groups reads each partition's as it
// is made, and a LIMIT stops the subquery early. Otherwise it runs the
// subquery to the end before the outer query starts (prepare), on the
// statement's goroutine, so that the subquery's operators are called from
// that goroutine only and its workers and the outer query's never run at
// once; then it passes on the rows it kept, to any number of workers.
type subqueryOp struct {
	opBase
	alias    string
	nVisible int
	stream   bool

	batches []*vec.Batch
	pos     atomic.Int64
	held    int64
}

func (s *subqueryOp) detail() []string {
	how := "rows: kept whole before the outer query runs (its GROUP BY may run parallel workers)"
	if s.stream {
		how = "rows: streamed to the outer query as it reads them"
	}
	return []string{"alias: " + s.alias, how}
}

// prepare runs the subquery and keeps its rows, charged to the budget,
// unless they stream.
func (s *subqueryOp) prepare(x *execCtx) error {
	if s.stream {
		return nil
	}
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
	if s.stream {
		b, err := s.children[0].next(x, w)
		if err != nil || b == nil {
			return nil, err
		}
		t0 := time.Now()
		defer s.stats.since(t0)
		s.stats.rowsIn.Add(int64(b.Len))
		s.stats.rowsOut.Add(int64(b.Len))
		return &vec.Batch{Vecs: b.Vecs[:s.nVisible], Len: b.Len}, nil
	}
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
