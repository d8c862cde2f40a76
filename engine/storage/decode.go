package storage

import (
	"errors"
	"fmt"
	"io"
	"math"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding"
)

// columnBuilder decodes one column of a file, row group after row group,
// into one preallocated slice for the whole column (numeric types) so that
// each page is decoded straight into its final place.
type columnBuilder struct {
	typ      vec.Type
	conv     conv
	optional bool
	prealloc bool // i64/f64 hold the whole column, sized from the footer
	i64      []int64
	f64      []float64
	off      int // rows filled so far in i64/f64
}

// newColumnBuilder prepares to decode a column of rows rows. The column is
// preallocated when the footer's row count is plausible for the file size;
// otherwise (a corrupt footer could claim billions of rows) vectors grow as
// pages actually deliver rows.
func newColumnBuilder(typ vec.Type, cv conv, optional bool, rows, fileSize int64) *columnBuilder {
	b := &columnBuilder{typ: typ, conv: cv, optional: optional}
	b.prealloc = rows <= max(1<<16, 64*fileSize)
	if !b.prealloc || typ == vec.String {
		return b
	}
	if typ.IsFloat() {
		b.f64 = make([]float64, rows)
	} else {
		b.i64 = make([]int64, rows)
	}
	return b
}

// grow makes room for rows [0, m) of v when not preallocated.
func (b *columnBuilder) grow(v *vec.Vector, m int) {
	if b.prealloc {
		return
	}
	switch {
	case b.typ == vec.String:
	case b.typ.IsFloat():
		if len(v.F64) < m {
			v.F64 = append(v.F64, make([]float64, m-len(v.F64))...)
		}
	case !b.optional && cap(v.I64) >= m:
		// convert writes every row of a column without NULLs: the
		// recycled array need not be cleared first.
		v.I64 = v.I64[:max(m, len(v.I64))]
	default:
		if len(v.I64) < m {
			v.I64 = append(v.I64, make([]int64, m-len(v.I64))...)
		}
	}
	if v.Valid != nil && len(v.Valid) < m {
		v.Valid = append(v.Valid, make([]bool, m-len(v.Valid))...)
	}
}

var errCorrupt = errors.New("corrupt column data")

// rowGroup decodes the pages of one row group's chunk, which must hold
// want rows, and closes them. bytesHint estimates the decoded bytes of a
// string chunk (from the footer's uncompressed size), to size the vector's
// byte buffer once.
func (b *columnBuilder) rowGroup(pages parquet.Pages, want, bytesHint int64) (v *vec.Vector, err error) {
	defer pages.Close()
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("%w: %v", errCorrupt, p)
		}
	}()
	n := int(want)
	if b.prealloc && b.off+n > len(b.i64)+len(b.f64) && b.typ != vec.String {
		return nil, fmt.Errorf("%w: more rows than the footer declares", errCorrupt)
	}
	v = &vec.Vector{Type: b.typ, Len: n}
	switch {
	case b.typ == vec.String:
		v.Offsets = make([]uint32, 1, min(n, 1<<20)+1)
		if bytesHint > 0 {
			v.Bytes = make([]byte, 0, min(bytesHint, vec.MaxStringBytes))
		}
	case !b.prealloc:
	case b.typ.IsFloat():
		v.F64 = b.f64[b.off : b.off+n : b.off+n]
	default:
		v.I64 = b.i64[b.off : b.off+n : b.off+n]
	}
	row := 0
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(p.RepetitionLevels()) > 0 {
			parquet.Release(p)
			return nil, errors.New("repeated values are not supported")
		}
		np := int(p.NumRows())
		if np < 0 || row+np > n {
			parquet.Release(p)
			return nil, fmt.Errorf("%w: pages hold more than the row group's %d rows", errCorrupt, n)
		}
		b.grow(v, row+np)
		err = b.page(v, p, row, np)
		parquet.Release(p)
		if err != nil {
			return nil, err
		}
		row += np
	}
	if row != n {
		return nil, fmt.Errorf("%w: pages hold %d rows, the row group %d", errCorrupt, row, n)
	}
	if b.typ != vec.String {
		b.off += n
	}
	return v, nil
}

// page decodes np rows of page p into v at row.
func (b *columnBuilder) page(v *vec.Vector, p parquet.Page, row, np int) error {
	pv, err := b.check(p, np)
	if err != nil {
		return err
	}
	_, err = b.convert(v, &pv, row, 0, np, 0)
	return err
}

// pageValues is a decoded page checked for conversion, which may then
// convert it a range of rows at a time.
type pageValues struct {
	np      int             // rows of the page
	defs    []byte          // definition levels; nil when no row is NULL
	data    encoding.Values // the present values, or the dictionary's values
	idx     []int32         // dictionary indexes, one per present value; nil without a dictionary
	present int             // values present in the page
	// plain is the page when it is a plainPage, whose values are
	// decompressed and checked as the conversions reach them (data and
	// idx are then unset).
	plain *plainPage
}

// check validates what every conversion of page p (np rows) relies on:
// the number of definition levels, the dictionary indexes' range and the
// string offsets, so that converting a range of rows checks only lengths.
func (b *columnBuilder) check(p parquet.Page, np int) (pageValues, error) {
	pv := pageValues{np: np, present: np}
	if pp, ok := p.(*plainPage); ok {
		if pp.np != np {
			return pv, fmt.Errorf("%w: a page of %d values for %d rows", errCorrupt, pp.np, np)
		}
		pv.plain = pp
		return pv, nil
	}
	defs := p.DefinitionLevels()
	if defs != nil && len(defs) != np {
		return pv, fmt.Errorf("%w: %d definition levels for %d rows", errCorrupt, len(defs), np)
	}
	if b.optional && defs != nil {
		nulls := countNulls(defs)
		if nulls > 0 {
			pv.defs, pv.present = defs, np-nulls
		}
	}
	pv.data = p.Data()
	if d := p.Dictionary(); d != nil {
		pv.idx = pv.data.Int32()
		if len(pv.idx) != pv.present {
			return pv, fmt.Errorf("%w: %d dictionary indexes for %d values", errCorrupt, len(pv.idx), pv.present)
		}
		dn := int32(d.Len())
		for _, x := range pv.idx {
			if x < 0 || x >= dn {
				return pv, fmt.Errorf("%w: dictionary index %d out of range [0,%d)", errCorrupt, x, dn)
			}
		}
		pv.data = d.Page().Data()
	}
	if b.conv == convBytes {
		buf, offs := pv.data.ByteArray()
		for k := 0; k+1 < len(offs); k++ {
			if offs[k] > offs[k+1] || int(offs[k+1]) > len(buf) {
				return pv, fmt.Errorf("%w: bad string offsets", errCorrupt)
			}
		}
	}
	return pv, nil
}

func countNulls(defs []byte) int {
	n := 0
	for _, d := range defs {
		if d == 0 {
			n++
		}
	}
	return n
}

// convert decodes rows [from, to) of the checked page pv into v at row;
// k0 is the number of values present in the page's rows before from. It
// returns the number present before to.
func (b *columnBuilder) convert(v *vec.Vector, pv *pageValues, row, from, to, k0 int) (next int, err error) {
	if from < 0 || from > to || to > pv.np || k0 < 0 || k0 > pv.present {
		return k0, fmt.Errorf("internal error: rows [%d,%d) of a %d-row page", from, to, pv.np)
	}
	np := to - from
	var defs []byte
	nv := np // values present in the range
	switch {
	case pv.defs == nil:
	case np == pv.np:
		defs, nv = pv.defs, pv.present // the whole page: check counted them
	default:
		defs = pv.defs[from:to]
		nv -= countNulls(defs)
	}
	if k0+nv > pv.present {
		return k0, fmt.Errorf("%w: definition levels out of step with the values", errCorrupt)
	}

	// rows maps the i-th present value of the range to its row.
	var rows []int32
	if defs != nil && nv < np {
		if v.Valid == nil {
			m := row + np
			if b.prealloc {
				m = v.Len
			}
			v.Valid = make([]bool, m)
			for i := 0; i < row; i++ {
				v.Valid[i] = true
			}
		}
		rows = make([]int32, 0, nv)
		for i, d := range defs {
			if d != 0 {
				rows = append(rows, int32(row+i))
				v.Valid[row+i] = true
			}
		}
	} else if v.Valid != nil {
		for i := row; i < row+np; i++ {
			v.Valid[i] = true
		}
	}

	data, idx := pv.data, pv.idx
	if pp := pv.plain; pp != nil {
		next = k0 + nv
		if b.conv == convBytes {
			return next, pp.appendStrings(v, row, k0, nv)
		}
		if data, err = pp.values(k0 + nv); err != nil {
			return k0, err
		}
	}
	if idx != nil {
		idx = idx[k0 : k0+nv]
	}
	at := func(i int) int { // row of the i-th present value
		if rows != nil {
			return int(rows[i])
		}
		return row + i
	}
	val := func(i int) int { // position in data of the i-th present value
		if idx != nil {
			return int(idx[i])
		}
		return k0 + i
	}
	count := pv.present
	if idx != nil || pv.plain != nil {
		// data holds the dictionary, whose indexes were checked, or a
		// plain page's values as far as they are decompressed, at least
		// k0+nv of them.
		count = -1
	}
	next = k0 + nv

	switch b.conv {
	case convBool:
		// Boolean pages hold their values bit-packed, least significant
		// bit first (pages read from a file start at bit 0).
		if idx != nil {
			return k0, errors.New("dictionary-encoded BOOLEAN pages are not supported")
		}
		bits := data.Boolean()
		if len(bits)*8 < pv.present {
			return k0, fmt.Errorf("%w: %d bytes of booleans for %d values", errCorrupt, len(bits), pv.present)
		}
		for i := 0; i < nv; i++ {
			j := k0 + i
			v.I64[at(i)] = int64(bits[j>>3] >> (j & 7) & 1)
		}
	case convInt32, convUint8, convUint16, convUint32:
		src := data.Int32()
		if count >= 0 && len(src) != count {
			return k0, fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), count)
		}
		dst := v.I64
		switch {
		case rows == nil && idx == nil:
			widenInt32(b.conv, dst[row:row+nv], src[k0:k0+nv])
		case rows == nil:
			widenInt32At(b.conv, dst[row:row+nv], src, idx)
		default:
			for k := 0; k < nv; k++ {
				x := src[val(k)]
				var y int64
				switch b.conv {
				case convInt32:
					y = int64(x)
				case convUint8:
					y = int64(uint8(x))
				case convUint16:
					y = int64(uint16(x))
				default:
					y = int64(uint32(x))
				}
				dst[at(k)] = y
			}
		}
	case convInt64, convMillis, convNanos:
		src := data.Int64()
		if count >= 0 && len(src) != count {
			return k0, fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), count)
		}
		dst := v.I64
		if rows == nil && idx == nil && b.conv == convInt64 {
			copy(dst[row:row+nv], src[k0:k0+nv])
			break
		}
		for k := 0; k < nv; k++ {
			x := src[val(k)]
			switch b.conv {
			case convMillis:
				x *= 1000
			case convNanos:
				x /= 1000
			}
			dst[at(k)] = x
		}
	case convInt96:
		src := data.Int96()
		if count >= 0 && len(src) != count {
			return k0, fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), count)
		}
		for k := 0; k < nv; k++ {
			v.I64[at(k)] = int96Micros(src[val(k)])
		}
	case convFloat:
		src := data.Float()
		if count >= 0 && len(src) != count {
			return k0, fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), count)
		}
		for k := 0; k < nv; k++ {
			v.F64[at(k)] = float64(src[val(k)])
		}
	case convDouble:
		src := data.Double()
		if count >= 0 && len(src) != count {
			return k0, fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), count)
		}
		if rows == nil && idx == nil {
			copy(v.F64[row:row+nv], src[k0:k0+nv])
			break
		}
		for k := 0; k < nv; k++ {
			v.F64[at(k)] = src[val(k)]
		}
	case convBytes:
		if err := b.bytesPage(v, data, idx, rows, row, np, k0, nv, count); err != nil {
			return k0, err
		}
	default:
		scale, ok := b.conv.decimalScale()
		if !ok {
			return k0, fmt.Errorf("internal error: conversion %d", b.conv)
		}
		if err := decimalPage(v.F64, data, count, nv, scale, at, val); err != nil {
			return k0, err
		}
	}
	return next, nil
}

// widenInt32 widens the INT32 values src, read as c says (signed, or
// unsigned 8, 16 or 32 bits), into d. The loops are written out per
// conversion: a choice made per value, or a closure per value, cost more
// than the conversion itself.
func widenInt32(c conv, d []int64, src []int32) {
	d = d[:len(src)]
	switch c {
	case convUint8:
		for i, x := range src {
			d[i] = int64(uint8(x))
		}
	case convUint16:
		for i, x := range src {
			d[i] = int64(uint16(x))
		}
	case convUint32:
		for i, x := range src {
			d[i] = int64(uint32(x))
		}
	default:
		for i, x := range src {
			d[i] = int64(x)
		}
	}
}

// widenInt32At is widenInt32 of the values src[idx[i]] (a dictionary's,
// whose indexes were checked).
func widenInt32At(c conv, d []int64, src []int32, idx []int32) {
	d = d[:len(idx)]
	switch c {
	case convUint8:
		for i, j := range idx {
			d[i] = int64(uint8(src[j]))
		}
	case convUint16:
		for i, j := range idx {
			d[i] = int64(uint16(src[j]))
		}
	case convUint32:
		for i, j := range idx {
			d[i] = int64(uint32(src[j]))
		}
	default:
		for i, j := range idx {
			d[i] = int64(src[j])
		}
	}
}

// bytesPage appends the strings of rows [row, row+np) (rows are appended
// in order, so v.Offsets has exactly row+1 entries on entry): nv values,
// from the k0-th present one on, or the values idx points at; count is the
// page's number of strings when data holds the page's values (-1: the
// dictionary's). check has validated the offsets.
func (b *columnBuilder) bytesPage(v *vec.Vector, data encoding.Values, idx, rows []int32, row, np, k0, nv, count int) error {
	if len(v.Offsets) != row+1 {
		return fmt.Errorf("internal error: string offsets out of step")
	}
	buf, offs := data.ByteArray()
	if n := max(0, len(offs)-1); count >= 0 && n != count {
		return fmt.Errorf("%w: %d strings for %d values", errCorrupt, n, count)
	}
	if idx == nil && rows == nil {
		// Fast path: one copy of the range's bytes.
		if nv > 0 {
			o := offs[k0 : k0+nv+1]
			base := uint32(len(v.Bytes))
			if uint64(base)+uint64(o[nv]-o[0]) > vec.MaxStringBytes {
				return errors.New("more than 4 GiB of strings in one row group")
			}
			v.Bytes = append(v.Bytes, buf[o[0]:o[nv]]...)
			for _, x := range o[1:] {
				v.Offsets = append(v.Offsets, base+x-o[0])
			}
		}
		return nil
	}
	k := 0
	for i := 0; i < np; i++ {
		if rows != nil && (k >= len(rows) || int(rows[k]) != row+i) {
			v.Offsets = append(v.Offsets, uint32(len(v.Bytes))) // NULL: empty
			continue
		}
		j := k0 + k
		if idx != nil {
			j = int(idx[k])
		}
		s := buf[offs[j]:offs[j+1]]
		if uint64(len(v.Bytes))+uint64(len(s)) > vec.MaxStringBytes {
			return errors.New("more than 4 GiB of strings in one row group")
		}
		v.Bytes = append(v.Bytes, s...)
		v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
		k++
	}
	return nil
}

// julianEpoch is the Julian day number of 1970-01-01.
const julianEpoch = 2440588

// int96Micros converts an INT96 timestamp (little-endian nanoseconds within
// the day in its first 8 bytes, the Julian day in the last 4) to
// microseconds since 1970-01-01 UTC, rounding down.
func int96Micros(x deprecated.Int96) int64 {
	nanos := int64(uint64(x[1])<<32 | uint64(x[0]))
	day := int64(int32(x[2])) - julianEpoch
	return day*86_400_000_000 + floorDiv(nanos, 1000)
}

// floorDiv divides rounding towards negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// pow10 holds the powers of ten a decimal's unscaled value is divided by.
var pow10 = func() (p [maxScale + 1]float64) {
	for i := range p {
		p[i] = math.Pow(10, float64(i))
	}
	return p
}()

// decimalPage converts nv unscaled DECIMAL values (INT32, INT64 or
// big-endian two's-complement FIXED_LEN_BYTE_ARRAY) of a page to doubles.
func decimalPage(dst []float64, data encoding.Values, count, nv, scale int, at, val func(int) int) error {
	div := pow10[scale]
	switch data.Kind() {
	case encoding.Int32:
		src := data.Int32()
		if count >= 0 && len(src) != count {
			return fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), count)
		}
		for k := 0; k < nv; k++ {
			dst[at(k)] = float64(src[val(k)]) / div
		}
	case encoding.Int64:
		src := data.Int64()
		if count >= 0 && len(src) != count {
			return fmt.Errorf("%w: %d values for %d rows", errCorrupt, len(src), count)
		}
		for k := 0; k < nv; k++ {
			dst[at(k)] = float64(src[val(k)]) / div
		}
	case encoding.FixedLenByteArray:
		buf, size := data.FixedLenByteArray()
		if size <= 0 || size > 16 || count >= 0 && len(buf) != count*size || len(buf)%size != 0 {
			return fmt.Errorf("%w: %d bytes of %d-byte decimals", errCorrupt, len(buf), size)
		}
		for k := 0; k < nv; k++ {
			j := val(k) * size
			if j+size > len(buf) {
				return fmt.Errorf("%w: decimal index out of range", errCorrupt)
			}
			dst[at(k)] = bigEndianFloat(buf[j:j+size]) / div
		}
	default:
		return fmt.Errorf("DECIMAL stored as %v is not supported", data.Kind())
	}
	return nil
}

// bigEndianFloat converts a big-endian two's-complement integer of up to
// 16 bytes to float64.
func bigEndianFloat(b []byte) float64 {
	var hi, lo uint64
	if b[0]&0x80 != 0 {
		hi, lo = ^uint64(0), ^uint64(0) // sign extension
	}
	for _, c := range b {
		hi = hi<<8 | lo>>56
		lo = lo<<8 | uint64(c)
	}
	if int64(hi) < 0 {
		// Negate the 128-bit value, convert, negate back.
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
		return -(float64(hi)*0x1p64 + float64(lo))
	}
	return float64(hi)*0x1p64 + float64(lo)
}
