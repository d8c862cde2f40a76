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
	err := cs.eachSelPage(ctx, n, sel, func(_ int, rs []int32, got, k int) error {
		return cs.takeSel(out, rs, got, k)
	})
	if err != nil {
		return err
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
	at, err := cs.takeRuns(out, rs, base, len(out.Offsets)-1)
	if err != nil {
		return err
	}
	cs.skip(base + k - at)
	return nil
}

// takeRuns converts rows rs of the current page (increasing, none before
// row at, the next to pass) into rows row, row+1, … of out, a run of
// consecutive rows at a time, passing the rows between, and returns the
// row after the last it converted.
func (cs *ColumnStream) takeRuns(out *vec.Vector, rs []int32, at, row int) (int, error) {
	for a := 0; a < len(rs); {
		r, m := int(rs[a]), 1
		for a+m < len(rs) && int(rs[a+m]) == r+m {
			m++
		}
		cs.skip(r - at)
		if out.Valid != nil && out.Type == vec.String {
			fillValid(out)
		}
		if err := cs.take(out, row, m); err != nil {
			return 0, err
		}
		at, a, row = r+m, a+m, row+m
	}
	return at, nil
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
	err := cs.eachSelPage(ctx, n, sel, func(i int, rs []int32, got, k int) error {
		if ok, err := cs.takeSelPlain(out, i, rs, got, k); ok || err != nil {
			return err
		}
		at, err := cs.takeRuns(out, rs, got, i)
		if err != nil {
			return err
		}
		cs.skip(got + k - at)
		return nil
	})
	if err != nil {
		return err
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

// NextSelTest is NextSel for the rows of sel that pass t (a test of
// strings; t.Lengths unsupported): it returns those rows, a subset of
// sel, and a vector of their strings. A PLAIN page's selected strings
// are tested where they lie in the page (on their lengths alone, for a
// test of emptiness) and only those that pass copied; any other page's
// are copied, tested, and those that fail squeezed out in place.
func (cs *ColumnStream) NextSelTest(ctx context.Context, n int, sel []int32, t *StringTest) (*vec.Vector, []int32, error) {
	if t.Lengths {
		return nil, nil, fmt.Errorf("internal error: NextSelTest of byte lengths")
	}
	n = max(0, min(n, cs.rows-cs.pos))
	if len(sel) > 0 && (sel[0] < 0 || int(sel[len(sel)-1]) >= n) {
		return nil, nil, fmt.Errorf("internal error: rows %d to %d of %d", sel[0], sel[len(sel)-1], n)
	}
	if cs.pages == nil && cs.whole == nil && n > 0 {
		if err := cs.open(); err != nil {
			return nil, nil, err
		}
	}
	if cs.whole != nil || cs.b == nil || cs.b.typ != vec.String {
		v, err := cs.NextSel(ctx, n, sel)
		if err != nil {
			return nil, nil, err
		}
		pass, err := t.Values(v)
		if err != nil {
			return nil, nil, err
		}
		kept := make([]int32, len(pass))
		for i, r := range pass {
			kept[i] = sel[r]
		}
		if len(pass) < v.Len {
			v = v.Gather(pass)
		}
		return v, kept, nil
	}
	out := cs.vector(len(sel))
	kept := make([]int32, 0, len(sel))
	err := cs.eachSelPage(ctx, n, sel, func(_ int, rs []int32, got, k int) (err error) {
		kept, err = cs.takeSelTest(out, rs, got, k, t, kept)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	cs.pos += n
	out.Len = len(out.Offsets) - 1
	if out.Valid != nil {
		fillValid(out)
	}
	return out, kept, nil
}

// takeSelTest is takeSel for the rows of rs that pass t, appending those
// to kept.
func (cs *ColumnStream) takeSelTest(out *vec.Vector, rs []int32, base, k int, t *StringTest, kept []int32) (_ []int32, err error) {
	pv := &cs.pv
	if pp := pv.plain; len(rs) > 0 && pp != nil && cs.b.conv == convBytes && (t.Empty != EmptyAny || t.Match != nil) {
		defer cs.corrupt(&err)
		from, k0 := cs.curPos, cs.curK
		last := int(rs[len(rs)-1]) - base + 1
		if pp.src != nil && 4*(k0+last) > lazyPrefix {
			if err := pp.ensure(pp.size); err != nil {
				return kept, cs.wrap(err)
			}
		}
		match := t.Match
		if t.Empty != EmptyAny {
			nonEmpty := t.Empty == NonEmpty
			match = func(s []byte) bool { return (len(s) > 0) == nonEmpty }
		}
		if out.Valid != nil {
			fillValid(out)
		}
		off := k0 - base
		if pp.have == pp.size && len(pp.pos) <= k0+1 {
			kept, err = pp.walkSelTest(out, rs, off, match, kept)
		} else {
			err = pp.strings(int(rs[len(rs)-1]) + off + 1)
			for _, r := range rs {
				if err != nil {
					break
				}
				s := pp.out[pp.pos[int(r)+off]+4 : pp.pos[int(r)+off+1]]
				if match(s) {
					out.Bytes = append(out.Bytes, s...)
					out.Offsets = append(out.Offsets, uint32(len(out.Bytes)))
					kept = append(kept, r)
				}
			}
		}
		if err != nil {
			return kept, cs.wrap(err)
		}
		if uint64(len(out.Bytes)) > vec.MaxStringBytes {
			return kept, cs.wrap(errors.New("more than 4 GiB of strings in one row group"))
		}
		if out.Valid != nil {
			fillValid(out)
		}
		cs.curPos, cs.curK = from+k, k0+k
		return kept, nil
	}
	// Any other page: the selected rows copied, tested, and those that
	// fail squeezed out.
	r0 := len(out.Offsets) - 1
	if err := cs.takeSel(out, rs, base, k); err != nil {
		return kept, err
	}
	m := len(out.Offsets) - 1 - r0
	if m == 0 {
		return kept, nil
	}
	out.Len = r0 + m
	if out.Valid != nil {
		fillValid(out)
	}
	pass, err := t.Values(out.Slice(r0, r0+m))
	if err != nil {
		return kept, err
	}
	keepStrings(out, r0, pass)
	for _, p := range pass {
		kept = append(kept, rs[p])
	}
	out.Len = r0 + len(pass)
	return kept, nil
}

// keepStrings keeps, of out's strings from row r0 on, those pass lists
// (ascending offsets from r0), moving them down in place, and cuts out's
// arrays after the last (out.Len is the caller's).
func keepStrings(out *vec.Vector, r0 int, pass []int32) {
	w, wb := r0, out.Offsets[r0]
	for _, p := range pass {
		i := r0 + int(p)
		a, b := out.Offsets[i], out.Offsets[i+1]
		if wb != a {
			copy(out.Bytes[wb:], out.Bytes[a:b])
		}
		wb += b - a
		out.Offsets[w+1] = wb
		if out.Valid != nil {
			out.Valid[w] = out.Valid[i]
		}
		w++
	}
	out.Offsets, out.Bytes = out.Offsets[:w+1], out.Bytes[:wb]
	if out.Valid != nil {
		out.Valid = out.Valid[:w]
	}
}

// walkSelTest is walkSel for the strings of rows rs that match passes:
// only those are copied, and their rows appended to kept.
func (p *plainPage) walkSelTest(v *vec.Vector, rs []int32, off int, match func([]byte) bool, kept []int32) ([]int32, error) {
	out, pos := p.out[:p.size], p.pos
	at := int(pos[len(pos)-1])
	b := v.Bytes
	s := len(pos) - 1 // the next string walked
	for _, r := range rs {
		t := int(r) + off
		if t < s || t >= p.np {
			return kept, fmt.Errorf("internal error: string %d of a page of %d, %d walked", t, p.np, s)
		}
		for ; s < t; s++ {
			end, ok := stringEnd(out, at)
			if !ok {
				return kept, badString(out, at)
			}
			pos = append(pos, uint32(end))
			at = end
		}
		end, ok := stringEnd(out, at)
		if !ok {
			return kept, badString(out, at)
		}
		if match(out[at+4 : end]) {
			b = appendPlain(b, out, at, end)
			v.Offsets = append(v.Offsets, uint32(len(b)))
			kept = append(kept, r)
		}
		pos = append(pos, uint32(end))
		at = end
		s++
	}
	v.Bytes, p.pos = b, pos
	if len(pos) == p.np+1 && at != len(out) {
		return kept, fmt.Errorf("%w: %d strings end at byte %d of a page of %d", errCorrupt, p.np, at, len(out))
	}
	return kept, nil
}
