package engine

import (
	"fmt"
	"strings"
	"time"

	"cachebook/engine/vec"
)

// orderKey is an ORDER BY key: a column of the projection.
type orderKey struct {
	col        int
	desc       bool
	nullsFirst bool
}

// sortOp is ORDER BY (keep < 0) or top-N (keep >= 0: ORDER BY … LIMIT,
// keeping only the best keep rows while its input streams in). It is a
// pipeline breaker: it returns everything as one batch.
type sortOp struct {
	opBase
	order []orderKey
	names []string // of the sort columns, for EXPLAIN
	cols  []vec.Column
	keep  int64 // rows to keep; -1: all
	done  bool
	held  int64
}

func (s *sortOp) detail() []string {
	var keys []string
	for _, o := range s.order {
		k := s.names[o.col]
		if o.desc {
			k += " DESC"
		}
		keys = append(keys, k)
	}
	d := []string{strings.Join(keys, ", ")}
	if s.keep >= 0 {
		d = append(d, fmt.Sprintf("top %d: keeps its best %d rows plus about one batch", s.keep, s.keep))
	}
	return d
}

func (s *sortOp) sortKeys(cols []*vec.Vector) []sortKey {
	keys := make([]sortKey, len(s.order))
	for i, o := range s.order {
		keys[i] = sortKey{v: cols[o.col], desc: o.desc, nullsFirst: o.nullsFirst}
	}
	return keys
}

func (s *sortOp) next(x *execCtx, w int) (*vec.Batch, error) {
	if s.done {
		return nil, nil
	}
	s.done = true
	child := s.children[0]
	var acc []*vec.Vector
	var single *vec.Batch // the input, when it came as one batch
	n := 0
	for {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
		b, err := child.next(x, w)
		if err != nil {
			return nil, err
		}
		if b == nil {
			break
		}
		t0 := time.Now()
		s.stats.rowsIn.Add(int64(b.Len))
		if s.crowded(b.Len) {
			// An aggregation's output comes in large parts (one per
			// worker or radix partition): selecting from each where it
			// lies costs one pass, where appending it to the buffer
			// first copied every row.
			if b, err = s.sorted(x, b.Vecs, b.Len); err != nil {
				return nil, err
			}
		}
		if acc == nil && single == nil {
			single = b
			s.stats.since(t0)
			continue
		}
		if acc == nil {
			acc = make([]*vec.Vector, len(s.cols))
			for i, c := range s.cols {
				acc[i] = emptyVec(c.Type)
				acc[i].AppendVector(single.Vecs[i])
			}
			n = single.Len
			single = nil
		}
		for i := range acc {
			acc[i].AppendVector(b.Vecs[i])
		}
		n += b.Len
		// Top-N keeps its best rows plus at most about one batch.
		if s.crowded(n) {
			kept, err := s.sorted(x, acc, n)
			if err != nil {
				return nil, err
			}
			acc, n = kept.Vecs, kept.Len
		}
		if err := s.charge(x, vecBytes(acc)); err != nil {
			return nil, err
		}
		s.stats.since(t0)
	}
	t0 := time.Now()
	defer s.stats.since(t0)
	if single != nil {
		acc, n = single.Vecs, single.Len
	}
	if acc == nil {
		return nil, nil
	}
	// The permutation (and its merge buffer) and the gathered output: all
	// rows for ORDER BY, only the kept ones for a top-N (the input itself
	// is charged already, by this operator or, when it came as one batch,
	// by the operator that made it).
	out := vecBytes(acc)
	if s.keep >= 0 && s.keep < int64(n) {
		out = out/int64(n)*s.keep + 1
	}
	if err := x.fits(s, int64(n)*8+out); err != nil {
		return nil, err
	}
	res, err := s.sorted(x, acc, n)
	if err != nil {
		return nil, err
	}
	s.charge(x, 0)
	s.stats.rowsOut.Add(int64(res.Len))
	return res, nil
}

// crowded reports whether a top-N holding n rows holds many more than it
// keeps: a small N is trimmed after every batch, a large one once it holds
// twice N.
func (s *sortOp) crowded(n int) bool {
	return s.keep >= 0 && int64(n) > max(2*s.keep, s.keep+morselRows/4)
}

// sorted returns the first rows of the n rows of vs in the sort's order:
// the kept ones for a top-N, all for ORDER BY.
func (s *sortOp) sorted(x *execCtx, vs []*vec.Vector, n int) (*vec.Batch, error) {
	idx, err := sortIndices(x.ctx, s.sortKeys(vs), n, int(s.keep))
	if err != nil {
		return nil, err
	}
	b := &vec.Batch{Vecs: make([]*vec.Vector, len(vs)), Len: len(idx)}
	for i, v := range vs {
		b.Vecs[i] = gather(v, idx)
	}
	return b, nil
}

// charge sets the bytes the operator holds to n.
func (s *sortOp) charge(x *execCtx, n int64) error {
	if n > s.held {
		if err := x.grow(s, n-s.held); err != nil {
			return err
		}
	} else {
		x.release(s, s.held-n)
	}
	s.held = n
	return nil
}

func (s *sortOp) close(x *execCtx) { s.charge(x, 0) }
