package storage

import (
	"context"
	"errors"
	"fmt"

	"cachebook/engine/vec"
)

// nextSelStrings is NextSel for a string column: the selected rows of
// each page are copied in one pass over the page (takeSel), not one call
// per run of consecutive rows, so that it costs less than converting the
// morsel whole and gathering the rows at any selectivity but the
// highest.
func (cs *ColumnStream) nextSelStrings(ctx context.Context, n int, sel []int32, out *vec.Vector) error {
	i := 0 // the next of sel
	for got := 0; got < n; {
		if cs.curLeft() == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("storage: reading %s: %w", cs.rd.t.Name, err)
			}
			rows := 0
			if i < len(sel) {
				rows = n - got
			}
			if err := cs.page(rows); err != nil {
				return err
			}
		}
		k := min(n-got, cs.curLeft())
		j := i
		for j < len(sel) && int(sel[j]) < got+k {
			j++
		}
		if err := cs.takeSel(out, sel[i:j], got, k); err != nil {
			return err
		}
		i, got = j, got+k
	}
	out.Len = len(out.Offsets) - 1
	if out.Valid != nil {
		fillValid(out)
	}
	return nil
}

// takeSel passes the current page's next k rows, the rows [base,
// base+k) of the ones NextSel reads, appending rows rs of them
// (increasing) to out: a PLAIN page's lengths are walked once as far as
// the last of them, and only their strings copied; a dictionary page's
// rows are picked by their indexes; any other page is converted one run
// of consecutive rows at a time. A page none of whose rows is selected
// is not decompressed.
func (cs *ColumnStream) takeSel(out *vec.Vector, rs []int32, base, k int) (err error) {
	if len(rs) == 0 {
		cs.skip(k)
		return nil
	}
	defer cs.corrupt(&err)
	pv := &cs.pv
	from, k0 := cs.curPos, cs.curK
	last := int(rs[len(rs)-1]) - base + 1 // the page's rows walked
	switch {
	case pv.plain != nil && cs.b.conv == convBytes:
		pp := pv.plain
		if pp.src != nil && 4*(k0+last) > lazyPrefix {
			if err := pp.ensure(pp.size); err != nil {
				return cs.wrap(err)
			}
		}
		if out.Valid != nil {
			fillValid(out)
		}
		off := k0 - base // string of row r: r+off
		if pp.have == pp.size && len(pp.pos) <= k0+1 {
			err = pp.walkSel(out, rs, off)
		} else {
			err = pp.copySel(out, rs, off)
		}
		if err != nil {
			return cs.wrap(err)
		}
		if out.Valid != nil {
			fillValid(out)
		}
		cs.curPos, cs.curK = from+k, k0+k
		return nil
	case pv.idx != nil && cs.b.conv == convBytes:
		buf, offs := pv.data.ByteArray()
		// The vector's own appends keep Len and Valid: bring them up to
		// its offsets, which a PLAIN page's walk extends alone.
		out.Len = len(out.Offsets) - 1
		if out.Valid != nil {
			fillValid(out)
		}
		kk, ri := k0, 0
		for i := from; i < from+last; i++ {
			present := pv.defs == nil || pv.defs[i] != 0
			if int(rs[ri]) == base+i-from {
				ri++
				if !present {
					out.AppendNull()
					continue
				}
				if kk >= len(pv.idx) {
					return cs.wrap(fmt.Errorf("%w: definition levels out of step with the values", errCorrupt))
				}
				e := pv.idx[kk]
				out.AppendStr(buf[offs[e]:offs[e+1]])
			}
			if present {
				kk++
			}
		}
		if uint64(len(out.Bytes)) > vec.MaxStringBytes {
			return cs.wrap(errors.New("more than 4 GiB of strings in one row group"))
		}
		cs.curPos, cs.curK = from+last, kk
		cs.skip(k - last)
		return nil
	}
	at := base // rows passed
	for i := 0; i < len(rs); {
		r, m := int(rs[i]), 1
		for i+m < len(rs) && int(rs[i+m]) == r+m {
			m++
		}
		cs.skip(r - at)
		if out.Valid != nil {
			fillValid(out)
		}
		if err := cs.take(out, len(out.Offsets)-1, m); err != nil {
			return err
		}
		at, i = r+m, i+m
	}
	cs.skip(base + k - at)
	return nil
}

// fillValid makes out.Valid as long as out's rows (its offsets), the
// rows it lacks valid.
func fillValid(out *vec.Vector) {
	rows := len(out.Offsets) - 1
	if len(out.Valid) > rows {
		out.Valid = out.Valid[:rows]
	}
	for len(out.Valid) < rows {
		out.Valid = append(out.Valid, true)
	}
}

// walkSel appends strings rs[i]+off of the page (increasing, none of
// them walked yet) to v, walking the page's strings from the last one
// walked to the last of them: one pass over the page, decompressed
// whole, copying only those. It checks what strings does.
func (p *plainPage) walkSel(v *vec.Vector, rs []int32, off int) error {
	out, pos := p.out[:p.size], p.pos
	at := int(pos[len(pos)-1])
	b := v.Bytes
	s := len(pos) - 1 // the next string walked
	for _, r := range rs {
		t := int(r) + off
		if t < s || t >= p.np {
			return fmt.Errorf("internal error: string %d of a page of %d, %d walked", t, p.np, s)
		}
		for ; s < t; s++ {
			end, ok := stringEnd(out, at)
			if !ok {
				return badString(out, at)
			}
			pos = append(pos, uint32(end))
			at = end
		}
		end, ok := stringEnd(out, at)
		if !ok {
			return badString(out, at)
		}
		b = appendPlain(b, out, at, end)
		v.Offsets = append(v.Offsets, uint32(len(b)))
		pos = append(pos, uint32(end))
		at = end
		s++
	}
	v.Bytes, p.pos = b, pos
	if uint64(len(b)) > vec.MaxStringBytes {
		return errors.New("more than 4 GiB of strings in one row group")
	}
	if len(pos) == p.np+1 && at != len(out) {
		return fmt.Errorf("%w: %d strings end at byte %d of a page of %d", errCorrupt, p.np, at, len(out))
	}
	return nil
}

// copySel is walkSel for a page decompressed a prefix at a time, or
// walked past the first of the strings: strings walks them first.
func (p *plainPage) copySel(v *vec.Vector, rs []int32, off int) error {
	if err := p.strings(int(rs[len(rs)-1]) + off + 1); err != nil {
		return err
	}
	for _, r := range rs {
		t := int(r) + off
		if t < 0 {
			return fmt.Errorf("internal error: string %d of a page", t)
		}
		v.Bytes = append(v.Bytes, p.out[p.pos[t]+4:p.pos[t+1]]...)
		v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
	}
	if uint64(len(v.Bytes)) > vec.MaxStringBytes {
		return errors.New("more than 4 GiB of strings in one row group")
	}
	return nil
}

// nextSelFixed is NextSel for a fixed-width column: a PLAIN page's
// selected values are picked out of it (takeSelPlain), the rows between
// them neither converted nor, past the last of them, decompressed; any
// other page converts one run of consecutive selected rows at a time. A
// page none of whose rows is selected is not decompressed.
func (cs *ColumnStream) nextSelFixed(ctx context.Context, n int, sel []int32, out *vec.Vector) error {
	i := 0 // the next of sel
	for got := 0; got < n; {
		if cs.curLeft() == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("storage: reading %s: %w", cs.rd.t.Name, err)
			}
			rows := 0
			if i < len(sel) {
				rows = n - got
			}
			if err := cs.page(rows); err != nil {
				return err
			}
		}
		k := min(n-got, cs.curLeft())
		j := i
		for j < len(sel) && int(sel[j]) < got+k {
			j++
		}
		rs := sel[i:j]
		switch ok, err := cs.takeSelPlain(out, i, rs, got, k); {
		case err != nil:
			return err
		case !ok:
			at := got // rows passed
			for a := 0; a < len(rs); {
				r, m := int(rs[a]), 1
				for a+m < len(rs) && int(rs[a+m]) == r+m {
					m++
				}
				cs.skip(r - at)
				if err := cs.take(out, i+a, m); err != nil {
					return err
				}
				at, a = r+m, a+m
			}
			cs.skip(got + k - at)
		}
		i, got = j, got+k
	}
	out.Len = len(sel)
	return nil
}

// takeSelPlain passes the current page's next k rows, the rows [base,
// base+k) of the ones NextSel reads, converting rows rs of them
// (increasing) into rows [row, row+len(rs)) of out: the values of those
// rows are picked out of the page by position (a PLAIN page's
// decompressed as far as the last of them), as a dictionary's are by
// their indexes, in one conversion, whatever the rows between. It
// reports false, having passed no row, for a page of strings or
// booleans.
func (cs *ColumnStream) takeSelPlain(out *vec.Vector, row int, rs []int32, base, k int) (ok bool, err error) {
	if len(rs) == 0 {
		cs.skip(k)
		return true, nil
	}
	pv := &cs.pv
	pp := pv.plain
	if pp != nil && pp.width == 0 || cs.b.conv == convBool || cs.b.conv == convBytes {
		return false, nil
	}
	defer cs.corrupt(&err)
	from, k0 := cs.curPos, cs.curK
	last := int(rs[len(rs)-1]) - base // the page's rows walked: from to from+last
	if from+last >= pv.np {
		return false, cs.wrap(fmt.Errorf("internal error: row %d of a page of %d", from+last, pv.np))
	}
	// idx: the position of each selected row's value among the page's
	// values; defs, with NULLs, the selected rows' definition levels.
	idx := cs.selIdx[:0]
	var defs []byte
	if pv.defs == nil {
		for _, r := range rs {
			idx = append(idx, int32(int(r)-base+k0))
		}
	} else {
		defs = cs.selDefs[:0]
		kk, ri := k0, 0
		for i := from; i <= from+last; i++ {
			d := pv.defs[i]
			if int(rs[ri]) == base+i-from {
				defs = append(defs, d)
				if d != 0 {
					idx = append(idx, int32(kk))
				}
				ri++
			}
			if d != 0 {
				kk++
			}
		}
		cs.selDefs = defs
	}
	if idx == nil {
		idx = []int32{} // every selected row NULL: no value, but picked
	}
	cs.selIdx = idx
	sub := pageValues{np: len(rs), present: len(idx), idx: idx, data: pv.data}
	if len(idx) < len(rs) {
		sub.defs = defs
	}
	if n := len(idx); n > 0 {
		hi := int(idx[n-1]) // the last value picked
		switch {
		case pp != nil:
			if sub.data, err = pp.values(hi + 1); err != nil {
				return false, cs.wrap(err)
			}
		case pv.idx != nil:
			if hi >= len(pv.idx) {
				return false, cs.wrap(fmt.Errorf("%w: definition levels out of step with the values", errCorrupt))
			}
			for i, j := range idx {
				idx[i] = pv.idx[j]
			}
		case hi >= pv.present:
			return false, cs.wrap(fmt.Errorf("%w: definition levels out of step with the values", errCorrupt))
		}
	}
	cs.b.grow(out, row+len(rs))
	if _, err := cs.b.convert(out, &sub, row, 0, len(rs), 0); err != nil {
		return false, cs.wrap(err)
	}
	cs.skip(k)
	return true, nil
}
