package engine

import (
	"sync"
	"time"

	"cachebook/engine/vec"
)

// subqueryOp runs a subquery of the FROM clause and passes on its visible
// columns. Workers above it may call it concurrently: the subquery's own
// operators run on one goroutine at a time.
type subqueryOp struct {
	opBase
	alias    string
	nVisible int
	mu       sync.Mutex
}

func (s *subqueryOp) detail() []string { return []string{"alias: " + s.alias} }

func (s *subqueryOp) next(x *execCtx, w int) (*vec.Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.children[0].next(x, 0)
	if err != nil || b == nil {
		return nil, err
	}
	t0 := time.Now()
	defer s.stats.since(t0)
	s.stats.rowsIn.Add(int64(b.Len))
	s.stats.rowsOut.Add(int64(b.Len))
	return &vec.Batch{Vecs: b.Vecs[:s.nVisible], Len: b.Len}, nil
}
