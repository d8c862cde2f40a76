package engine

import (
	"bytes"
	"cmp"
	"fmt"
	"sync"
	"sync/atomic"

	"cachebook/engine/vec"
)

// topNBound is the late materialisation of a top-N over a table scan
// (SELECT * … WHERE … ORDER BY k LIMIT n, k a column of the table): the
// top-N publishes the first ORDER BY key of the n-th row it keeps each
// time it trims its rows, and the scan, which decodes k with the filter's
// columns, drops the rows whose k sorts strictly after it before it
// decodes the other columns. Such a row can never be among the first n:
// n rows seen already sort before it on the first key alone. Rows that tie
// with the bound pass, so ties, however the top-N breaks them, come out as
// without the bound. Once the bound is tight, nearly every morsel of a
// table in random order is dropped whole and its other columns are never
// decoded: only the filter's columns and k are read in full, and the other
// columns only of the morsels that still hold a candidate.
//
// A bound holds one value, a row of the key's vector, so it charges
// nothing beyond the top-N's own rows.
type topNBound struct {
	col        int // the table column of the first ORDER BY key
	name       string
	desc       bool
	nullsFirst bool
	keep       int64

	mu  sync.Mutex
	cur atomic.Pointer[vec.Vector] // the bound: one row; nil until the top-N has keep rows

	cut  atomic.Int64 // rows the scan dropped
	kept atomic.Int64 // rows the scan let through it
}

// compare orders row i of v against the bound b (a one-row vector of the
// same type) as compareRows orders its first key: negative when row i
// sorts before b, 0 on a tie.
func (t *topNBound) compare(v *vec.Vector, i int, b *vec.Vector) int {
	an, bn := v.IsNull(i), b.IsNull(0)
	if an || bn {
		if an && bn {
			return 0
		}
		if an == t.nullsFirst {
			return -1
		}
		return 1
	}
	var c int
	switch v.Type {
	case vec.String:
		c = bytes.Compare(v.Str(i), b.Str(0))
	case vec.Float64, vec.Float32:
		c = vec.CompareFloat(v.F64[i], b.F64[0])
	case vec.UInt64:
		c = cmp.Compare(uint64(v.I64[i]), uint64(b.I64[0]))
	case vec.Null:
	default:
		c = cmp.Compare(v.I64[i], b.I64[0])
	}
	if t.desc {
		return -c
	}
	return c
}

// publish offers row i of v, the key of the keep-th row of a set of rows
// the top-N has seen, as the bound; a looser one than the bound already
// published is ignored.
func (t *topNBound) publish(v *vec.Vector, i int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.cur.Load(); b != nil && t.compare(v, i, b) >= 0 {
		return
	}
	t.cur.Store(gather(v, []int32{int32(i)}))
}

// filter returns the rows of sel (nil: all n rows) whose key, v, does not
// sort after the bound; sel itself while there is no bound yet.
func (t *topNBound) filter(v *vec.Vector, sel []int32, n int) []int32 {
	b := t.cur.Load()
	if b == nil {
		return sel
	}
	in := n
	if sel != nil {
		in = len(sel)
	}
	out := make([]int32, 0, min(in, 64))
	if sel == nil && v.Valid == nil && b.Valid == nil && v.Type != vec.String && !v.Type.IsFloat() && v.Type != vec.UInt64 && v.Type != vec.Null {
		// The common case: integers (timestamps, dates) without NULLs.
		x := b.I64[0]
		if t.desc {
			for i, k := range v.I64[:n] {
				if k >= x {
					out = append(out, int32(i))
				}
			}
		} else {
			for i, k := range v.I64[:n] {
				if k <= x {
					out = append(out, int32(i))
				}
			}
		}
	} else if sel == nil {
		for i := range n {
			if t.compare(v, i, b) <= 0 {
				out = append(out, int32(i))
			}
		}
	} else {
		for _, i := range sel {
			if t.compare(v, int(i), b) <= 0 {
				out = append(out, i)
			}
		}
	}
	t.cut.Add(int64(in - len(out)))
	t.kept.Add(int64(len(out)))
	return out
}

// any reports whether a row of v, n rows of the key, passes the bound;
// true while there is none. The rows of a v none of whose rows passes
// count as dropped.
func (t *topNBound) any(v *vec.Vector, n int) bool {
	b := t.cur.Load()
	if b == nil {
		return true
	}
	if v.Valid == nil && b.Valid == nil && v.Type != vec.String && !v.Type.IsFloat() && v.Type != vec.UInt64 && v.Type != vec.Null {
		x := b.I64[0]
		if t.desc {
			for _, k := range v.I64[:n] {
				if k >= x {
					return true
				}
			}
		} else {
			for _, k := range v.I64[:n] {
				if k <= x {
					return true
				}
			}
		}
	} else {
		for i := range n {
			if t.compare(v, i, b) <= 0 {
				return true
			}
		}
	}
	t.cut.Add(int64(n))
	return false
}

// scanDetail is the scan's EXPLAIN line for the bound.
func (t *topNBound) scanDetail() string {
	s := fmt.Sprintf("top-N late materialisation: %s decoded first; rows sorting after the top-%d's current %d-th %s are dropped before the other columns are decoded (a streamed morsel with none left decodes no other column, the filter's included)", t.name, t.keep, t.keep, t.name)
	if c, k := t.cut.Load(), t.kept.Load(); c+k > 0 {
		s += fmt.Sprintf(" (%d rows dropped, %d passed)", c, k)
	}
	return s
}
