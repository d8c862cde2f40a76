package engine

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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
	// bound, for a top-N over a table scan ordered by one of its
	// columns, is where it publishes its keep-th key for the scan.
	bound *topNBound
	// cut, for a top-N without a bound for a scan, is the same bound
	// over its own input: the rows of a batch whose first key sorts
	// after the keep-th row kept at the last trim are dropped as the
	// batch comes, before they are copied and sorted with the rest.
	cut *topNBound
	// threads, above 1, is the workers that pull the input of a top-N
	// with a bound at once (its input is then a projection of a scan,
	// each of whose rows carries its position as a last key).
	threads int
	mu      sync.Mutex // the parts taken in, with several workers
}

// positionName is the hidden last ORDER BY key of a top-N fed by several
// workers: a row's position in the table (row group << 32 | row).
const positionName = "(row position)"

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
	if s.bound != nil {
		d = append(d, fmt.Sprintf("hands its %d-th %s to the scan below as it trims", s.keep, s.bound.name))
	}
	if c := s.cut; c != nil && c.cut.Load() > 0 {
		d = append(d, fmt.Sprintf("dropped %d of its input rows as they came, their %s sorting after its %d-th kept", c.cut.Load(), c.name, s.keep))
	}
	if s.threads > 1 {
		d = append(d, fmt.Sprintf("input: %d workers; ties broken by the row's position in the table", s.threads))
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

// next takes in its whole input and returns it sorted (or its best keep
// rows). Every byte it keeps or builds is charged before it is taken: the
// input's rows as they come (a batch may be a view into a projection's or
// a row group's vectors), the copy of several batches into one set of
// vectors, the permutation and its merge buffer, and the gathered rows,
// whose size is counted from the permutation before they are copied.
// What it returns stays charged until the query is done.
func (s *sortOp) next(x *execCtx, w int) (*vec.Batch, error) {
	if s.done {
		return nil, nil
	}
	s.done = true
	child := s.children[0]
	var in sortInput
	var failed atomic.Bool // a worker failed: the others stop too
	pull := func(w int) (rows int64, err error) {
		defer func() {
			if err != nil {
				failed.Store(true)
			}
		}()
		for !failed.Load() {
			if err := x.ctx.Err(); err != nil {
				return rows, err
			}
			b, err := child.next(x, w)
			if err != nil || b == nil {
				return rows, err
			}
			if b.Len == 0 {
				continue
			}
			rows += int64(b.Len)
			if s.threads > 1 {
				s.mu.Lock()
			}
			err = s.take(x, &in, b)
			if s.threads > 1 {
				s.mu.Unlock()
			}
			if err != nil {
				return rows, err
			}
		}
		return rows, nil
	}
	if s.threads > 1 {
		ws, err := x.runWorkers(s.threads, workerPhase{name: "scan", run: func(w, _ int) (int64, time.Duration, error) {
			rows, err := pull(w)
			return rows, 0, err
		}})
		s.stats.mu.Lock()
		s.stats.workers = ws
		s.stats.mu.Unlock()
		if err != nil {
			return nil, err
		}
	} else if _, err := pull(w); err != nil {
		return nil, err
	}
	parts := in.parts
	t0 := time.Now()
	defer s.stats.since(t0)
	if len(parts) == 0 {
		return nil, nil
	}
	res, err := s.sorted(x, parts)
	if err != nil {
		return nil, err
	}
	s.stats.rowsOut.Add(int64(res.Len))
	return res, nil
}

// sortInput is what a sort has taken in so far.
type sortInput struct {
	parts []*vec.Batch // rows taken in but not yet sorted (the kept ones first)
	rows  int
}

// take takes in b, a batch of the sort's input.
func (s *sortOp) take(x *execCtx, in *sortInput, b *vec.Batch) error {
	t0 := time.Now()
	defer s.stats.since(t0)
	s.stats.rowsIn.Add(int64(b.Len))
	if s.cut == nil && s.bound == nil && s.keep > 0 && len(s.order) > 0 {
		o := s.order[0]
		s.cut = &topNBound{col: o.col, name: s.names[o.col], desc: o.desc, nullsFirst: o.nullsFirst, keep: s.keep}
	}
	if s.cut != nil {
		if sel := s.cut.filter(b.Vecs[s.order[0].col], nil, b.Len); sel != nil && len(sel) < b.Len {
			if len(sel) == 0 {
				return nil
			}
			cut := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
			for i, v := range b.Vecs {
				if v != nil {
					cut.Vecs[i] = gather(v, sel)
				}
			}
			b = cut
		}
	}
	if s.crowded(b.Len) && len(in.parts) > 0 {
		// Select from a large part where it lies rather than copy
		// it next to the rows kept so far: sorted charges b, then
		// its best rows, on top of what is held already.
		held := s.held
		s.held = 0
		top, err := s.sortedBatch(x, b)
		s.held += held
		if err != nil {
			return err
		}
		b = top
	} else if err := s.charge(x, s.held+liveBytes(b.Vecs)); err != nil {
		return err
	}
	in.parts = append(in.parts, b)
	in.rows += b.Len
	// Top-N keeps its best rows plus at most about one batch. An
	// aggregation's output comes in large parts (one per worker or
	// radix partition): selecting from each as it comes keeps one.
	if s.crowded(in.rows) {
		kept, err := s.sorted(x, in.parts)
		if err != nil {
			return err
		}
		in.parts, in.rows = []*vec.Batch{kept}, kept.Len
	}
	return nil
}

// sorted returns the first rows of parts, which hold all the operator's
// rows and are charged (s.held), in the sort's order: the kept ones for a
// top-N, all for ORDER BY. Afterwards only the result is charged.
func (s *sortOp) sorted(x *execCtx, parts []*vec.Batch) (*vec.Batch, error) {
	vs, n := parts[0].Vecs, parts[0].Len
	if len(parts) > 1 {
		// One copy of every row, charged while the parts are held.
		var size int64
		for _, p := range parts {
			size += liveBytes(p.Vecs)
		}
		if err := s.charge(x, s.held+size); err != nil {
			return nil, err
		}
		vs = make([]*vec.Vector, len(s.cols))
		col := make([]*vec.Vector, len(parts))
		for i, c := range s.cols {
			for k, p := range parts {
				col[k] = p.Vecs[i]
			}
			v, err := vec.Concat(c.Type, col)
			if err != nil {
				return nil, fmt.Errorf("sorting: column %s: %w", c.Name, err)
			}
			vs[i] = v
		}
		n = 0
		for _, p := range parts {
			n += p.Len
		}
		clear(parts) // garbage from here on: only the copy is charged
		if err := s.charge(x, size); err != nil {
			return nil, err
		}
	}
	// The permutation, and for a full sort its merge buffer.
	perm := int64(n) * 8
	if s.keep >= 0 && s.keep < int64(n)/8 {
		perm = s.keep * 4
	}
	if err := s.charge(x, s.held+perm); err != nil {
		return nil, err
	}
	idx, err := sortIndices(x.ctx, s.sortKeys(vs), n, int(s.keep))
	if err != nil {
		return nil, err
	}
	// The gathered rows, counted before they are copied.
	in := s.held - perm
	if err := s.charge(x, s.held+gatherBytes(vs, idx)); err != nil {
		return nil, err
	}
	b := &vec.Batch{Vecs: make([]*vec.Vector, len(vs)), Len: len(idx)}
	for i, v := range vs {
		b.Vecs[i] = gather(v, idx)
	}
	if s.keep > 0 && int64(b.Len) >= s.keep {
		for _, t := range []*topNBound{s.bound, s.cut} {
			if t != nil {
				t.publish(b.Vecs[s.order[0].col], int(s.keep-1))
			}
		}
	}
	if err := s.charge(x, s.held-perm-in); err != nil {
		return nil, err
	}
	return b, nil
}

// sortedBatch is sorted over the one batch b, charging it first.
func (s *sortOp) sortedBatch(x *execCtx, b *vec.Batch) (*vec.Batch, error) {
	if err := s.charge(x, s.held+liveBytes(b.Vecs)); err != nil {
		return nil, err
	}
	return s.sorted(x, []*vec.Batch{b})
}

// gatherBytes is the memory liveBytes will count for the rows idx of vs,
// computed before they are gathered.
func gatherBytes(vs []*vec.Vector, idx []int32) int64 {
	k := int64(len(idx))
	var n int64
	for _, v := range vs {
		if v == nil {
			continue
		}
		n += k * 8
		if v.Valid != nil {
			n += k
		}
		if v.Type == vec.String {
			n += k * 4
			for _, i := range idx {
				n += int64(v.Offsets[i+1] - v.Offsets[i])
			}
		}
	}
	return n
}

// crowded reports whether a top-N holding n rows holds many more than it
// keeps: a small N is trimmed after every batch, a large one once it holds
// twice N.
//
// A top-N that hands its bound to the scan trims sooner: each trim may
// tighten the bound, and its input, cut by the bound, is small.
func (s *sortOp) crowded(n int) bool {
	if s.bound != nil {
		return s.keep >= 0 && int64(n) > max(2*s.keep, s.keep+256)
	}
	return s.keep >= 0 && int64(n) > max(2*s.keep, s.keep+morselRows/4)
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
