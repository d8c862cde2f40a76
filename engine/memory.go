package engine

import (
	"errors"
	"fmt"
	"time"

	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// evalChunkBytes bounds the result of evaluating one string expression
// over one slice of a morsel before its memory is checked against the
// statement's budget.
const evalChunkBytes = 8 << 20

// evalSliceTime is about how long one evaluation of a string expression
// may take before the morsel is evaluated in slices, with a look at the
// context between them.
const evalSliceTime = 20 * time.Millisecond

// probeRows is the slice of a morsel a string expression is first
// evaluated over, to learn how many bytes a row of its result takes.
const probeRows = 256

// evalBounded evaluates e over b for operator op and returns its result
// with the bytes of it still charged to the statement's budget, which the
// caller releases once it drops the result (0 when e builds no strings).
//
// What an expression builds is bounded before it is built: for the
// functions of package expr the bytes of strings each row can make follow
// from its input (expr.BuildSize: regexp_replace repeating its input
// twice, nested thirty times, may make 2^31 bytes of a row's each byte).
// The rows are evaluated in slices whose bound fits in tempChunkBytes, and
// each slice's bound is charged before it is evaluated, the part of it
// the slice did not use released after. So a blow-up fails with
// ErrMemoryLimit before a byte of it is built, even for a single row, and
// cancellation is seen between slices. An expression this package cannot
// bound is measured instead, over a first slice of rows (evalMeasured).
func evalBounded(x *execCtx, op operator, e expr.Expr, b *vec.Batch) (*vec.Vector, int64, error) {
	size, ok := expr.BuildSize(e)
	if !ok {
		v, err := evalMeasured(x, op, e, b)
		return v, 0, err
	}
	if size.Zero() || b.Len == 0 {
		v, err := e.Eval(b)
		return v, 0, err
	}
	var parts []*vec.Vector
	var held int64 // the results' bytes in parts
	fail := func(err error) (*vec.Vector, int64, error) {
		x.release(op, held)
		return nil, 0, fmt.Errorf("evaluating %s: %w", abbreviate(e.String()), err)
	}
	chunk := x.tempChunkBytes()
	maxRows := probeRows // the first slice learns how long a row takes
	for lo := 0; lo < b.Len; {
		if err := x.ctx.Err(); err != nil {
			x.release(op, held)
			return nil, 0, err
		}
		hi := fitRows(size, b, lo, min(b.Len, lo+maxRows), chunk)
		bound := size.Rows(b, lo, hi)
		if err := x.grow(op, bound); err != nil {
			return fail(err)
		}
		t0 := time.Now()
		v, err := e.Eval(sliceBatch(b, lo, hi))
		x.release(op, bound)
		if err != nil {
			x.release(op, held)
			return nil, 0, err
		}
		if lo == 0 {
			perRow := time.Since(t0) / time.Duration(hi)
			maxRows = b.Len
			if perRow*time.Duration(b.Len) > evalSliceTime {
				// Slices that take about evalSliceTime each, so that
				// cancellation is seen between them.
				maxRows = int(max(1, evalSliceTime/max(perRow, 1)))
			}
		}
		if e.Type() == vec.String {
			// What the result holds, its arrays' spare capacity
			// included (a string function's output grows by appending).
			n := vecBytes([]*vec.Vector{v})
			if err := x.grow(op, n); err != nil {
				return fail(err)
			}
			held += n
		}
		if lo == 0 && hi == b.Len {
			return v, held, nil
		}
		parts = append(parts, v)
		lo = hi
	}
	if e.Type() != vec.String {
		v, err := vec.Concat(e.Type(), parts)
		if err != nil {
			return fail(err)
		}
		return v, 0, nil
	}
	// The copy into one vector, sized exactly, while the parts are still
	// held.
	total := liveBytes(parts)
	if total > vec.MaxStringBytes {
		return fail(errors.New("more than 4 GiB of strings in one batch"))
	}
	if err := x.grow(op, total); err != nil {
		return fail(err)
	}
	v, err := vec.Concat(e.Type(), parts)
	x.release(op, held) // the parts, garbage now
	if err != nil {
		x.release(op, total)
		return nil, 0, err
	}
	return v, total, nil
}

// fitRows returns the end of the longest slice [lo, end) with end <= hi
// whose bound fits in chunk, and at least lo+1: a single row is charged
// whatever its bound, and fails if it does not fit in the budget.
func fitRows(size expr.Size, b *vec.Batch, lo, hi int, chunk int64) int {
	if size.Rows(b, lo, hi) <= chunk {
		return hi
	}
	// The bound grows with the rows: the largest end that fits.
	a, z := lo+1, hi // size.Rows(b, lo, z) > chunk
	for a < z {
		m := int(uint(a+z+1) >> 1)
		if size.Rows(b, lo, m) <= chunk {
			a = m
		} else {
			z = m - 1
		}
	}
	return a
}

// evalMeasured evaluates e, whose string results package expr cannot
// bound, over b for operator op. Most expressions have results of a fixed
// size per row and are evaluated at once. A string expression that builds
// new strings may produce far more bytes than its input: it is evaluated
// over a first slice of rows, and when the whole morsel's result would
// pass evalChunkBytes (or its evaluation evalSliceTime), over slices of
// that size, each charged to the budget before the next is built. The
// result is not left charged.
func evalMeasured(x *execCtx, op operator, e expr.Expr, b *vec.Batch) (*vec.Vector, error) {
	if e.Type() != vec.String {
		if temps := stringTemps(e); len(temps) > 0 {
			return evalWithTemps(x, op, e, temps, b)
		}
		return e.Eval(b)
	}
	if isColumnRef(e) || b.Len <= probeRows {
		return e.Eval(b)
	}
	t0 := time.Now()
	head, err := e.Eval(sliceBatch(b, 0, probeRows))
	if err != nil {
		return nil, err
	}
	perRowTime := time.Since(t0) / probeRows
	perRow := max(1, liveBytes([]*vec.Vector{head})/probeRows)
	slow := perRowTime*time.Duration(b.Len) > evalSliceTime
	if perRow*int64(b.Len) <= evalChunkBytes && !slow {
		return e.Eval(b)
	}
	chunk := int(max(1, evalChunkBytes/perRow))
	if slow {
		chunk = min(chunk, int(max(1, evalSliceTime/max(perRowTime, 1))))
	}
	out := emptyVec(vec.String)
	var held int64
	defer func() { x.release(op, held) }()
	add := func(v *vec.Vector) error {
		n := liveBytes([]*vec.Vector{v})
		if err := x.grow(op, n); err != nil {
			return fmt.Errorf("evaluating %s: %w", abbreviate(e.String()), err)
		}
		held += n
		if int64(len(out.Bytes))+int64(len(v.Bytes)) > vec.MaxStringBytes {
			return fmt.Errorf("evaluating %s: more than 4 GiB of strings in one batch", abbreviate(e.String()))
		}
		out.AppendVector(v)
		return nil
	}
	if err := add(head); err != nil {
		return nil, err
	}
	for start := probeRows; start < b.Len; start += chunk {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
		v, err := e.Eval(sliceBatch(b, start, min(start+chunk, b.Len)))
		if err != nil {
			return nil, err
		}
		if err := add(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stringTemps returns the sub-expressions below e's root that build new
// strings: a predicate such as REGEXP_REPLACE(URL, …) LIKE '%x%' returns
// booleans, but the strings it matches are built first and held until the
// comparison is done. Column references and constants build nothing.
func stringTemps(e expr.Expr) []expr.Expr {
	var out []expr.Expr
	expr.Walk(e, func(s expr.Expr) bool {
		if s == e || s.Type() != vec.String || isColumnRef(s) {
			return true
		}
		if _, ok := s.(*expr.Const); ok {
			return true
		}
		out = append(out, s)
		return true
	})
	return out
}

// evalWithTemps evaluates e, whose result has a fixed size per row but
// whose sub-expressions temps build strings (LENGTH(REGEXP_REPLACE(…))),
// over slices of b whose strings fit in evalChunkBytes, charging each
// slice's strings to the budget while it is evaluated.
func evalWithTemps(x *execCtx, op operator, e expr.Expr, temps []expr.Expr, b *vec.Batch) (*vec.Vector, error) {
	perRow, err := tempBytesPerRow(x, op, temps, b)
	if err != nil {
		return nil, err
	}
	chunk := int(max(1, x.tempChunkBytes()/perRow))
	var out *vec.Vector
	for start := 0; start < b.Len || start == 0; start += chunk {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+chunk, b.Len)
		charge := perRow * int64(end-start)
		if err := x.grow(op, charge); err != nil {
			return nil, fmt.Errorf("evaluating %s: %w", abbreviate(e.String()), err)
		}
		v, err := e.Eval(sliceBatch(b, start, end))
		x.release(op, charge)
		if err != nil {
			return nil, err
		}
		if start == 0 && end == b.Len {
			return v, nil
		}
		if out == nil {
			out = emptyVec(e.Type())
		}
		out.AppendVector(v)
	}
	return out, nil
}

// tempChunkBytes is how many bytes of temporary strings one evaluation
// may build: evalChunkBytes, or an eighth of a smaller memory limit.
func (x *execCtx) tempChunkBytes() int64 {
	c := int64(evalChunkBytes)
	if x.budget != nil && x.budget.Limit > 0 {
		c = min(c, max(1, x.budget.Limit/8))
	}
	return c
}

// tempProbeRows is how many rows tempBytesPerRow evaluates, one at a time.
const tempProbeRows = 16

// tempBytesPerRow returns how many bytes of strings temps build per row
// of b at most. When package expr can bound them (expr.BuildSize), it is
// the bound of the largest row, checked against the budget before any is
// built. Otherwise it is learnt by evaluating temps one row at a time over
// b's first rows, charging each row's strings to the budget before the
// next: a sub-expression that builds more than the whole limit for a
// single row fails with ErrMemoryLimit after that row.
func tempBytesPerRow(x *execCtx, op operator, temps []expr.Expr, b *vec.Batch) (int64, error) {
	if size, ok := tempsSize(temps); ok {
		m := max(1, size.RowMax(b, 0, b.Len))
		if err := x.fits(op, m); err != nil {
			return 0, fmt.Errorf("evaluating %s: %w", abbreviate(temps[0].String()), err)
		}
		return m, nil
	}
	var held int64
	defer func() { x.release(op, held) }()
	rows := min(tempProbeRows, b.Len)
	for r := range rows {
		one := sliceBatch(b, r, r+1)
		for _, t := range temps {
			v, err := t.Eval(one)
			if err != nil {
				return 0, err
			}
			n := liveBytes([]*vec.Vector{v})
			if err := x.grow(op, n); err != nil {
				return 0, fmt.Errorf("evaluating %s: %w", abbreviate(t.String()), err)
			}
			held += n
		}
	}
	return max(1, held/int64(max(rows, 1))), nil
}

// tempsSize bounds the strings temps build together: the sum of the
// bounds of those not inside another (which count what is below them).
func tempsSize(temps []expr.Expr) (expr.Size, bool) {
	inner := map[expr.Expr]bool{}
	for _, t := range temps {
		expr.Walk(t, func(s expr.Expr) bool {
			if s != t {
				inner[s] = true
			}
			return true
		})
	}
	var size expr.Size
	for _, t := range temps {
		if inner[t] {
			continue
		}
		s, ok := expr.BuildSize(t)
		if !ok {
			return expr.Size{}, false
		}
		size = size.Plus(s)
	}
	return size, true
}

// sliceBatch returns rows [a, b) of batch bt without copying.
func sliceBatch(bt *vec.Batch, a, b int) *vec.Batch {
	out := &vec.Batch{Vecs: make([]*vec.Vector, len(bt.Vecs)), Len: b - a}
	for i, v := range bt.Vecs {
		out.Vecs[i] = sliceVec(v, a, b)
	}
	return out
}

// liveBytes is the memory of the rows of vs (not of the arrays they may
// be views into).
func liveBytes(vs []*vec.Vector) int64 {
	var n int64
	for _, v := range vs {
		if v == nil {
			continue
		}
		n += int64(v.Len) * 8
		if v.Type == vec.String && len(v.Offsets) > v.Len {
			n += int64(v.Offsets[v.Len]-v.Offsets[0]) + int64(v.Len)*4
		}
		if v.Valid != nil {
			n += int64(v.Len)
		}
	}
	return n
}

// stringBytes is the bytes of string data the vectors hold (what a hash
// table stores per key beyond its fixed-size words).
func stringBytes(vs []*vec.Vector) int64 {
	var n int64
	for _, v := range vs {
		if v != nil && v.Type == vec.String && len(v.Offsets) > v.Len {
			n += int64(v.Offsets[v.Len] - v.Offsets[0])
		}
	}
	return n
}
