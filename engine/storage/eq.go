package storage

import (
	"context"
	"fmt"
	"math"

	"cachebook/engine/vec"
)

// NextEq returns which of the next n rows (fewer at the end of the row
// group) hold the integer c, as increasing indexes below n, without
// converting the column into a vector: a PLAIN page of INT32 or INT64
// values without NULLs is compared where its values lie, any other page's
// rows are converted into a scratch vector and compared there (NULL
// equals nothing); a UBIGINT column's are compared bit for bit. ok is
// false, and no row is read, for a column whose stored integers are not
// its values (unsigned narrower than 64 bits, milliseconds) or one served
// from memory.
func (cs *ColumnStream) NextEq(ctx context.Context, n int, c int64) (sel []int32, ok bool, err error) {
	if cs.whole != nil {
		return nil, false, nil
	}
	n = max(0, min(n, cs.rows-cs.pos))
	if cs.pages == nil && n > 0 {
		if err := cs.open(); err != nil {
			return nil, false, err
		}
	}
	if cs.b == nil || cs.b.conv != convInt32 && cs.b.conv != convInt64 {
		return nil, false, nil
	}
	sel = cs.selection(n)
	err = cs.eachPage(ctx, n, n, func(int) bool { return true }, func(got, k int) (err error) {
		sel, err = cs.takeEq(sel, got, k, c)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	cs.pos += n
	cs.passed = len(sel)
	return sel, true, nil
}

// takeEq compares the current page's next k rows, the rows [base, base+k)
// of the ones NextEq reads, with c, appending those equal to sel.
func (cs *ColumnStream) takeEq(sel []int32, base, k int, c int64) (_ []int32, err error) {
	pv := &cs.pv
	if pp := pv.plain; pp != nil && pv.defs == nil && pv.idx == nil {
		defer cs.corrupt(&err)
		k0 := cs.curK
		data, err := pp.values(k0 + k)
		if err != nil {
			return sel, cs.wrap(err)
		}
		if cs.b.conv == convInt32 {
			src := data.Int32()
			if len(src) < k0+k {
				return sel, cs.wrap(fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), k0+k))
			}
			if c >= math.MinInt32 && c <= math.MaxInt32 {
				sel = appendEq(sel, src[k0:k0+k], int32(c), base)
			}
		} else {
			src := data.Int64()
			if len(src) < k0+k {
				return sel, cs.wrap(fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), k0+k))
			}
			sel = appendEq(sel, src[k0:k0+k], c, base)
		}
		cs.skip(k)
		return sel, nil
	}
	// Any other page: its rows converted, then compared.
	tmp := cs.eqTmp
	if tmp == nil {
		tmp = &vec.Vector{Type: cs.b.typ}
		cs.eqTmp = tmp
	}
	tmp.Len, tmp.I64, tmp.Valid = 0, tmp.I64[:0], nil
	if err := cs.take(tmp, 0, k); err != nil {
		return sel, err
	}
	for i, x := range tmp.I64[:k] {
		if x == c && !tmp.IsNull(i) {
			sel = append(sel, int32(base+i))
		}
	}
	return sel, nil
}

// appendEq appends to sel base+i for each i where xs[i] is c.
func appendEq[T int32 | int64](sel []int32, xs []T, c T, base int) []int32 {
	for i, x := range xs {
		if x == c {
			sel = append(sel, int32(base+i))
		}
	}
	return sel
}
