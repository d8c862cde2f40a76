package storage

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"cachebook/engine/vec"
)

// StringTest is a predicate over the values of a string column that a
// ColumnStream evaluates as it reads the column (NextTest), so that only
// the strings that pass are copied into the vector it returns: a page
// encoded with a dictionary is tested once per dictionary entry, its rows
// then selected by their indexes; a PLAIN page under a test of emptiness
// is tested on its strings' lengths. A StringTest may be shared by the
// streams of several goroutines.
type StringTest struct {
	// Values returns the rows of v (strings, NULL where v says so) that
	// pass, in increasing order. It is called with a dictionary's entries
	// followed by one NULL, once per column chunk, and with the rows of
	// the pages that have no dictionary. It must depend on each value
	// alone and fail on none.
	Values func(v *vec.Vector) ([]int32, error)
	// Empty, when not EmptyAny, says that Values passes exactly the empty
	// strings (EmptyOnly) or exactly the non-empty ones (NonEmpty), and
	// never a NULL.
	Empty EmptyTest
	// Match, when not nil, is Values for one string, not NULL: a PLAIN
	// page's strings are tested with it where they lie in the page, and
	// only those that pass copied (not converted first, then tested).
	Match func([]byte) bool
	// Contains, when not nil, says that Match is a search for Contains
	// in the string (its absence, with NotContains): a PLAIN page's
	// strings are searched as one buffer.
	Contains    []byte
	NotContains bool
	// Lengths asks NextTest for the byte lengths of the strings that
	// pass (a BIGINT vector, NULL where the row is), not the strings:
	// their bytes are then never copied.
	Lengths bool

	// What the streams did, for EXPLAIN: dictionaries tested, their
	// entries, and the rows decided by a dictionary, by the strings'
	// lengths, by Match in the page, and by Values over the rows' own
	// values.
	Dicts, DictEntries, DictRows, LengthRows, MatchRows, ValueRows atomic.Int64
}

// EmptyTest is a test of a string's emptiness (see StringTest.Empty).
type EmptyTest uint8

const (
	EmptyAny  EmptyTest = iota // not a test of emptiness
	EmptyOnly                  // col = ''
	NonEmpty                   // col <> ''
)

// NextTest is Next for the rows that pass t: of the next n rows (fewer at
// the end of the row group) it returns the rows that pass, as increasing
// indexes below n, and a vector of those rows only. The strings of the
// rows that fail are not copied.
func (cs *ColumnStream) NextTest(ctx context.Context, n int, t *StringTest) (*vec.Vector, []int32, error) {
	n = max(0, min(n, cs.rows-cs.pos))
	if cs.whole != nil {
		v := cs.whole.Slice(cs.pos, cs.pos+n)
		cs.pos += n
		sel, err := t.Values(v)
		if err != nil {
			return nil, nil, err
		}
		t.ValueRows.Add(int64(n))
		if t.Lengths {
			return ByteLengths(v.Gather(sel)), sel, nil
		}
		return v.Gather(sel), sel, nil
	}
	if cs.pages == nil && n > 0 {
		if err := cs.open(); err != nil {
			return nil, nil, err
		}
	}
	if cs.b.typ != vec.String {
		return nil, nil, fmt.Errorf("internal error: a string test on a column of %s", cs.b.typ)
	}
	var out *vec.Vector
	if t.Lengths {
		out = cs.lengths(n)
	} else {
		out = cs.vector(n)
	}
	sel := cs.selection(n)
	err := cs.eachPage(ctx, n, n, func(int) bool { return true }, func(got, k int) (err error) {
		sel, err = cs.takeTest(out, sel, got, k, t)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	cs.pos += n
	cs.passed = len(sel)
	out.Len = len(sel)
	if !t.Lengths && len(sel)*2 < n && cs.spare == nil {
		// Few passed: their strings are copied into a vector of their
		// size, and out, sized for n rows, converts the next morsel.
		small := &vec.Vector{Type: vec.String, Len: out.Len,
			Offsets: slices.Clone(out.Offsets), Bytes: slices.Clone(out.Bytes)}
		if out.Valid != nil {
			small.Valid = slices.Clone(out.Valid)
		}
		cs.spare = out
		out = small
	}
	return out, sel, nil
}

// takeTest tests the current page's next k rows, the rows [base,
// base+k) of the ones NextTest reads, appending those that pass to out
// and their indexes to sel.
func (cs *ColumnStream) takeTest(out *vec.Vector, sel []int32, base, k int, t *StringTest) (_ []int32, err error) {
	defer cs.corrupt(&err)
	pv := &cs.pv
	from, to, k0 := cs.curPos, cs.curPos+k, cs.curK
	switch {
	case pv.idx != nil:
		if cs.dictVec == nil {
			if err := cs.testDict(pv, t); err != nil {
				return sel, cs.wrap(err)
			}
		}
		pass, dv := cs.dictPass, cs.dictVec
		null := int32(dv.Len - 1)
		kk := k0
		if pv.defs == nil {
			// No NULLs: row i's entry is the page's value i, and most
			// rows fail a selective test after one lookup.
			if k0+k > len(pv.idx) {
				return sel, cs.wrap(fmt.Errorf("%w: %d dictionary indexes for %d rows", errCorrupt, len(pv.idx), k0+k))
			}
			for i, e := range pv.idx[k0 : k0+k] {
				if pass[e] {
					appendValue(out, dv, int(e), t.Lengths)
					sel = append(sel, int32(base+i))
				}
			}
			cs.curPos, cs.curK = to, k0+k
			t.DictRows.Add(int64(k))
			return sel, nil
		}
		for i := from; i < to; i++ {
			e := null
			if pv.defs[i] != 0 {
				if kk >= len(pv.idx) {
					return sel, cs.wrap(fmt.Errorf("%w: definition levels out of step with the values", errCorrupt))
				}
				e = pv.idx[kk]
				kk++
			}
			if pass[e] {
				appendValue(out, dv, int(e), t.Lengths)
				sel = append(sel, int32(base+i-from))
			}
		}
		cs.curPos, cs.curK = to, kk
		t.DictRows.Add(int64(k))
		return sel, nil
	case pv.plain != nil && cs.b.conv == convBytes && t.Empty != EmptyAny:
		pp := pv.plain
		if pp.src != nil && 4*(k0+k) > lazyPrefix {
			if err := pp.ensure(pp.size); err != nil {
				return sel, cs.wrap(err)
			}
		}
		nonEmpty := t.Empty == NonEmpty
		if pp.have == pp.size && len(pp.pos) == k0+1 {
			if sel, err = pp.walkTest(out, sel, base, k, nonEmpty, t.Lengths); err != nil {
				return sel, cs.wrap(err)
			}
		} else {
			if err := pp.strings(k0 + k); err != nil {
				return sel, cs.wrap(err)
			}
			pos, b := pp.pos[k0:k0+k+1], pp.out
			for j := range k {
				switch {
				case (pos[j+1]-pos[j] > 4) != nonEmpty:
					continue
				case t.Lengths:
					out.I64 = append(out.I64, int64(pos[j+1]-pos[j]-4))
				default:
					out.Bytes = append(out.Bytes, b[pos[j]+4:pos[j+1]]...)
					out.Offsets = append(out.Offsets, uint32(len(out.Bytes)))
				}
				sel = append(sel, int32(base+j))
			}
		}
		if uint64(len(out.Bytes)) > vec.MaxStringBytes {
			return sel, cs.wrap(fmt.Errorf("more than 4 GiB of strings in one row group"))
		}
		cs.curPos, cs.curK = to, k0+k
		t.LengthRows.Add(int64(k))
		return sel, nil
	}
	if pv.plain != nil && cs.b.conv == convBytes && t.Match != nil {
		pp := pv.plain
		if pp.src != nil && 4*(k0+k) > lazyPrefix {
			if err := pp.ensure(pp.size); err != nil {
				return sel, cs.wrap(err)
			}
		}
		if pp.have == pp.size && len(pp.pos) == k0+1 {
			if t.Contains != nil {
				sel, err = pp.walkContains(out, sel, base, k, t.Contains, t.NotContains, t.Lengths)
			} else {
				sel, err = pp.walkMatch(out, sel, base, k, t.Match, t.Lengths)
			}
			if err != nil {
				return sel, cs.wrap(err)
			}
		} else {
			if err := pp.strings(k0 + k); err != nil {
				return sel, cs.wrap(err)
			}
			pos, b := pp.pos[k0:k0+k+1], pp.out
			for j := range k {
				switch {
				case !t.Match(b[pos[j]+4 : pos[j+1]]):
					continue
				case t.Lengths:
					out.I64 = append(out.I64, int64(pos[j+1]-pos[j]-4))
				default:
					out.Bytes = append(out.Bytes, b[pos[j]+4:pos[j+1]]...)
					out.Offsets = append(out.Offsets, uint32(len(out.Bytes)))
				}
				sel = append(sel, int32(base+j))
			}
		}
		if uint64(len(out.Bytes)) > vec.MaxStringBytes {
			return sel, cs.wrap(fmt.Errorf("more than 4 GiB of strings in one row group"))
		}
		cs.curPos, cs.curK = to, k0+k
		t.MatchRows.Add(int64(k))
		return sel, nil
	}
	// Any other page: its rows converted, then tested.
	if !t.Lengths {
		return cs.convertTest(out, sel, base, k, t)
	}
	tmp := cs.testTmp
	if tmp == nil {
		tmp = vec.NewVector(vec.String, k)
		cs.testTmp = tmp
	}
	*tmp = vec.Vector{Type: vec.String, Bytes: tmp.Bytes[:0], Offsets: append(tmp.Offsets[:0], 0)}
	cs.b.grow(tmp, k)
	next, err := cs.b.convert(tmp, pv, 0, from, to, k0)
	if err != nil {
		return sel, cs.wrap(err)
	}
	tmp.Len = k
	if tmp.Valid != nil {
		tmp.Valid = tmp.Valid[:k]
	}
	cs.curPos, cs.curK = to, next
	pass, err := t.Values(tmp)
	if err != nil {
		return sel, err
	}
	for _, r := range pass {
		appendValue(out, tmp, int(r), t.Lengths)
		sel = append(sel, int32(base)+r)
	}
	t.ValueRows.Add(int64(k))
	return sel, nil
}

// convertTest is takeTest for a page tested on its values: its k rows
// are converted into out after the rows there, tested there, and those
// that fail are squeezed out, the bytes of the others moved down over
// them (none when every row passes): one copy of the strings, as Next
// and a filter over its vector, not two.
func (cs *ColumnStream) convertTest(out *vec.Vector, sel []int32, base, k int, t *StringTest) ([]int32, error) {
	pv := &cs.pv
	from, to, k0 := cs.curPos, cs.curPos+k, cs.curK
	r0 := len(out.Offsets) - 1
	cs.b.grow(out, r0+k)
	next, err := cs.b.convert(out, pv, r0, from, to, k0)
	if err != nil {
		return sel, cs.wrap(err)
	}
	cs.curPos, cs.curK = to, next
	out.Len = r0 + k
	pass, err := t.Values(out.Slice(r0, r0+k))
	if err != nil {
		return sel, err
	}
	keepStrings(out, r0, pass)
	for _, r := range pass {
		sel = append(sel, int32(base)+r)
	}
	t.ValueRows.Add(int64(k))
	return sel, nil
}

// testDict converts the dictionary of the page pv, a NULL after its
// entries, and evaluates t over them, once per chunk.
func (cs *ColumnStream) testDict(pv *pageValues, t *StringTest) error {
	_, offs := pv.data.ByteArray()
	n := max(0, len(offs)-1)
	dv := vec.NewVector(vec.String, n+1)
	dict := pageValues{np: n, present: n, data: pv.data}
	cs.b.grow(dv, n)
	if _, err := cs.b.convert(dv, &dict, 0, 0, n, 0); err != nil {
		return err
	}
	dv.Offsets = append(dv.Offsets, uint32(len(dv.Bytes)))
	dv.Len = n + 1
	dv.Valid = make([]bool, n+1)
	for i := range n {
		dv.Valid[i] = true
	}
	sel, err := t.Values(dv)
	if err != nil {
		return err
	}
	pass := make([]bool, n+1)
	for _, r := range sel {
		pass[r] = true
	}
	cs.dictVec, cs.dictPass = dv, pass
	t.Dicts.Add(1)
	t.DictEntries.Add(int64(n))
	return nil
}

// appendValue appends row i of v (a string vector) to out, whose Len is
// not kept: its rows are its offsets, or, with lengths, its values, the
// strings' byte lengths.
func appendValue(out, v *vec.Vector, i int, lengths bool) {
	if lengths {
		if v.Valid != nil && !v.Valid[i] {
			if out.Valid == nil {
				out.Valid = make([]bool, len(out.I64), max(len(out.I64)+1, 16))
				for j := range out.Valid {
					out.Valid[j] = true
				}
			}
			out.Valid = append(out.Valid, false)
			out.I64 = append(out.I64, 0)
			return
		}
		out.I64 = append(out.I64, int64(v.Offsets[i+1]-v.Offsets[i]))
		if out.Valid != nil {
			out.Valid = append(out.Valid, true)
		}
		return
	}
	if v.Valid != nil && !v.Valid[i] {
		rows := len(out.Offsets) - 1
		if out.Valid == nil {
			out.Valid = make([]bool, rows, max(rows+1, 16))
			for j := range out.Valid {
				out.Valid[j] = true
			}
		}
		out.Valid = append(out.Valid, false)
		out.Offsets = append(out.Offsets, uint32(len(out.Bytes)))
		return
	}
	out.Bytes = append(out.Bytes, v.Bytes[v.Offsets[i]:v.Offsets[i+1]]...)
	out.Offsets = append(out.Offsets, uint32(len(out.Bytes)))
	if out.Valid != nil {
		out.Valid = append(out.Valid, true)
	}
}

// walkTest (lengths: appending the strings' byte lengths to v.I64) is walkStrings for the page's next nv strings that are empty
// or not (nonEmpty), rows [base, base+nv) of a NextTest: it appends
// those to v and their rows to sel, walking the strings as it tests
// them, in one pass over the page, decompressed whole.
func (p *plainPage) walkTest(v *vec.Vector, sel []int32, base, nv int, nonEmpty, lengths bool) ([]int32, error) {
	out, pos := p.out[:p.size], p.pos
	at := int(pos[len(pos)-1])
	b := v.Bytes
	for j := range nv {
		end, ok := stringEnd(out, at)
		if !ok {
			return sel, badString(out, at)
		}
		if (end-at > 4) == nonEmpty && lengths {
			v.I64 = append(v.I64, int64(end-at-4))
			sel = append(sel, int32(base+j))
		} else if (end-at > 4) == nonEmpty {
			b = appendPlain(b, out, at, end)
			v.Offsets = append(v.Offsets, uint32(len(b)))
			sel = append(sel, int32(base+j))
		}
		pos = append(pos, uint32(end))
		at = end
	}
	v.Bytes, p.pos = b, pos
	if len(pos) == p.np+1 && at != len(out) {
		return sel, fmt.Errorf("%w: %d strings end at byte %d of a page of %d", errCorrupt, p.np, at, len(out))
	}
	return sel, nil
}

// walkMatch is walkTest for the strings match passes, tested where
// they lie in the page.
func (p *plainPage) walkMatch(v *vec.Vector, sel []int32, base, nv int, match func([]byte) bool, lengths bool) ([]int32, error) {
	out, pos := p.out[:p.size], p.pos
	at := int(pos[len(pos)-1])
	b := v.Bytes
	for j := range nv {
		end, ok := stringEnd(out, at)
		if !ok {
			return sel, badString(out, at)
		}
		if match(out[at+4 : end]) {
			if lengths {
				v.I64 = append(v.I64, int64(end-at-4))
			} else {
				b = appendPlain(b, out, at, end)
				v.Offsets = append(v.Offsets, uint32(len(b)))
			}
			sel = append(sel, int32(base+j))
		}
		pos = append(pos, uint32(end))
		at = end
	}
	v.Bytes, p.pos = b, pos
	if len(pos) == p.np+1 && at != len(out) {
		return sel, fmt.Errorf("%w: %d strings end at byte %d of a page of %d", errCorrupt, p.np, at, len(out))
	}
	return sel, nil
}

// walkContains is walkMatch for the strings that hold lit (that do not,
// with not): the page's bytes are searched for lit as one buffer from
// the string being walked on, a hit kept until the walk reaches the
// string it lies in, so that a rare lit costs one vectorised scan of the
// page rather than a call per string. A hit that runs past the end of
// the string it starts in is none of its (nor can a later one be): the
// search resumes at the next string's bytes.
func (p *plainPage) walkContains(v *vec.Vector, sel []int32, base, nv int, lit []byte, not, lengths bool) ([]int32, error) {
	out, pos := p.out[:p.size], p.pos
	at := int(pos[len(pos)-1])
	b := v.Bytes
	hit := -1 // the next hit found at or after it was sought; len(out) when none
	for j := range nv {
		end, ok := stringEnd(out, at)
		if !ok {
			return sel, badString(out, at)
		}
		if hit < at+4 {
			// The hit, if any, lies before the string: seek the next.
			from := at + 4
			if i := bytes.Index(out[from:], lit); i >= 0 {
				hit = from + i
			} else {
				hit = len(out)
			}
		}
		if (hit+len(lit) <= end) != not {
			if lengths {
				v.I64 = append(v.I64, int64(end-at-4))
			} else {
				b = appendPlain(b, out, at, end)
				v.Offsets = append(v.Offsets, uint32(len(b)))
			}
			sel = append(sel, int32(base+j))
		}
		pos = append(pos, uint32(end))
		at = end
	}
	v.Bytes, p.pos = b, pos
	if len(pos) == p.np+1 && at != len(out) {
		return sel, fmt.Errorf("%w: %d strings end at byte %d of a page of %d", errCorrupt, p.np, at, len(out))
	}
	return sel, nil
}

// ByteLengths returns the byte lengths of the strings of v, a BIGINT
// vector NULL where v is (see StringTest.Lengths).
func ByteLengths(v *vec.Vector) *vec.Vector {
	out := &vec.Vector{Type: vec.Int64, Len: v.Len, I64: make([]int64, v.Len)}
	for i := range out.I64 {
		out.I64[i] = int64(v.Offsets[i+1] - v.Offsets[i])
	}
	if v.Valid != nil {
		out.Valid = slices.Clone(v.Valid[:v.Len])
	}
	return out
}
