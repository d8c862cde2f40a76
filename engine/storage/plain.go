package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"cachebook/engine/vec"

	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// plainPage is a data page of a required column of PLAIN-encoded INT32,
// INT64, FLOAT, DOUBLE or BYTE_ARRAY values (every column of the
// generated hits table), which the engine decodes itself instead of
// parquet-go: its values are converted straight from the decompressed page
// bytes, strings copied once from there into the vector (parquet-go copies
// them into buffers of its own first), and a SNAPPY page is decompressed
// only as far as the rows converted reach. The first look at a table (SELECT
// * … LIMIT 10) thus decompresses a few hundred bytes of each column's first
// page, not the page, and touches no fresh buffer for it; a scan of whole
// row groups decompresses each page whole, in one call, as before.
//
// A page's CRC, when its writer wrote one, is still checked over the whole
// page before any of its values is converted. Without one, a SNAPPY page
// whose tail does not decompress fails only when a conversion reaches the
// tail: a query that stops before it (LIMIT 10) gets the rows before it.
//
// Only the methods the readers of pages call are implemented (NumRows and
// the levels, Data and Dictionary); the other methods of parquet.Page are
// not: calling one panics, which the readers turn into an error.
type plainPage struct {
	parquet.Page // nil

	np    int // rows, each holding one value
	phys  format.Type
	width int // bytes per value; 0 for BYTE_ARRAY
	size  int // bytes of the values decompressed
	// out holds the values decompressed so far, have bytes: while a
	// SNAPPY page is decompressed a prefix at a time, a buffer of
	// lazyPrefix bytes and a little more (the page's own, of size bytes,
	// is taken from whole only when the conversions reach past it).
	out   []byte
	have  int
	src   []byte // the compressed values (SNAPPY); nil once out is whole
	sd    snappyPrefix
	whole func() []byte // the buffer of size bytes for the page decompressed whole

	// BYTE_ARRAY: value k is out[pos[k]+4 : pos[k+1]]; pos holds the
	// values walked so far, checked to lie inside the page.
	pos []uint32
}

// lazyPrefix is the most bytes of a SNAPPY page decompressed a few at a
// time: a conversion that reaches further decompresses the page whole (the
// assembly decoder is faster), starting over.
const lazyPrefix = 16 << 10

// lazyFirst is the most bytes a conversion may first ask of a SNAPPY page
// (or, later, more than twice those decompressed) for the page to be
// decompressed a prefix at a time: one asking more is a scan's, which
// reads the page whole soon after. Decompressing its prefix first cost
// the scan the prefix twice, once in the slower Go loop: at 2 threads,
// every page Q42 of ClickBench reads on the 20M-row file began so, by
// 7.8 KB on average (12 MB of about 400 MB decompressed); with lazyFirst
// 2.3 MB.
const lazyFirst = 2 << 10

func (p *plainPage) NumRows() int64                 { return int64(p.np) }
func (p *plainPage) NumValues() int64               { return int64(p.np) }
func (p *plainPage) NumNulls() int64                { return 0 }
func (p *plainPage) RepetitionLevels() []byte       { return nil }
func (p *plainPage) DefinitionLevels() []byte       { return nil }
func (p *plainPage) Dictionary() parquet.Dictionary { return nil }

// Data returns the page's values as far as they are decompressed; the
// readers of pages convert through values instead.
func (p *plainPage) Data() encoding.Values {
	v, _ := p.values(0)
	return v
}

// plainWidth returns the bytes per value of a PLAIN page of physical type
// phys that a plainPage reads, 0 for BYTE_ARRAY, and whether it reads it.
func plainWidth(phys format.Type) (int, bool) {
	switch phys {
	case format.Int32, format.Float:
		return 4, true
	case format.Int64, format.Double:
		return 8, true
	case format.ByteArray:
		return 0, true
	}
	return 0, false
}

// plainConv reports whether the conversion cv of values of physical type
// phys reads plainPages.
func plainConv(cv conv, phys format.Type) bool {
	switch cv {
	case convInt32, convUint8, convUint16, convUint32:
		return phys == format.Int32
	case convInt64, convMillis, convNanos:
		return phys == format.Int64
	case convFloat:
		return phys == format.Float
	case convDouble:
		return phys == format.Double
	case convBytes:
		return phys == format.ByteArray
	}
	return false
}

// newPlainPage returns a page of np values of physical type phys whose
// PLAIN-encoded values are src compressed with codec, size bytes
// decompressed. whole returns a buffer of size bytes for them, prefix
// one of lazyPrefix+snappyOvershoot bytes at least for a SNAPPY page
// decompressed a prefix at a time. pos is a buffer the page may use for
// its string positions.
func newPlainPage(np int, phys format.Type, codec format.CompressionCodec, src []byte, size int, whole func() []byte, prefix []byte, pos []uint32, dec *decompressors) (*plainPage, error) {
	width, _ := plainWidth(phys)
	p := &plainPage{np: np, phys: phys, width: width, size: size, whole: whole, pos: pos[:0]}
	switch {
	case codec == format.Snappy && size > lazyPrefix && len(prefix) >= lazyPrefix+snappyOvershoot:
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errCorrupt, err)
		}
		if n != size {
			return nil, fmt.Errorf("%w: the page decompresses to %d bytes, the header says %d", errCorrupt, n, size)
		}
		p.src, p.out = src, prefix
		p.sd = snappyPrefix{src: src, s: len(src) - len(skipUvarint(src))}
	default:
		p.out = whole()
		if err := dec.decompressInto(codec, p.out, src); err != nil {
			return nil, err
		}
		p.have = size
	}
	// Checked after the codec's own checks, which say more of a page
	// whose header's sizes are wrong.
	if width > 0 && size != np*width {
		return nil, fmt.Errorf("%w: %d bytes of values for %d %s values", errCorrupt, size, np, phys)
	}
	if width == 0 && (size < 4*np || uint64(size) > 1<<32-1) {
		return nil, fmt.Errorf("%w: %d bytes of values for %d strings", errCorrupt, size, np)
	}
	if width == 0 {
		p.pos = append(p.pos, 0)
	}
	return p, nil
}

// skipUvarint returns b after its leading uvarint.
func skipUvarint(b []byte) []byte {
	_, n := binary.Uvarint(b)
	if n <= 0 {
		return nil
	}
	return b[n:]
}

// ensure decompresses the page's first n bytes at least.
func (p *plainPage) ensure(n int) error {
	if n <= p.have {
		return nil
	}
	if n > p.size {
		return fmt.Errorf("%w: values past the page's %d bytes", errCorrupt, p.size)
	}
	if n <= lazyPrefix && n <= max(lazyFirst, 2*p.have) {
		d, err := p.sd.decode(p.out, p.size, min(p.size, max(n, 2*p.have, 1024), lazyPrefix))
		if err != nil {
			return err
		}
		p.have = d
		if p.have < p.size {
			return nil
		}
	} else {
		p.out = p.whole()
		if err := decodeSnappy(p.out, p.src); err != nil {
			return err
		}
	}
	p.have, p.src = p.size, nil
	return nil
}

// strings walks the page's strings up to value n (exclusive), checking
// that each lies inside the page.
func (p *plainPage) strings(n int) error {
	if n > p.np {
		return fmt.Errorf("%w: string %d of a page of %d", errCorrupt, n, p.np)
	}
	if p.src != nil && 4*n > lazyPrefix {
		// Their lengths alone pass the prefix decompressed a few bytes
		// at a time: decompress the page whole now.
		if err := p.ensure(p.size); err != nil {
			return err
		}
	}
	for k := len(p.pos) - 1; k < n; k++ {
		at := int(p.pos[k])
		if err := p.ensure(at + 4); err != nil {
			return err
		}
		end := at + 4 + int(binary.LittleEndian.Uint32(p.out[at:]))
		if end > p.size || end < at {
			return fmt.Errorf("%w: a string of %d bytes at %d in a page of %d", errCorrupt, end-at-4, at, p.size)
		}
		if err := p.ensure(end); err != nil {
			return err
		}
		p.pos = append(p.pos, uint32(end))
	}
	if n == p.np && int(p.pos[n]) != p.size {
		return fmt.Errorf("%w: %d strings end at byte %d of a page of %d", errCorrupt, n, p.pos[n], p.size)
	}
	return nil
}

// appendStrings appends the page's strings [k0, k0+nv) to v, which holds
// row rows (v.Offsets has row+1 entries).
func (p *plainPage) appendStrings(v *vec.Vector, row, k0, nv int) error {
	if len(v.Offsets) != row+1 {
		return fmt.Errorf("internal error: string offsets out of step")
	}
	if p.src != nil && 4*(k0+nv) > lazyPrefix {
		if err := p.ensure(p.size); err != nil {
			return err
		}
	}
	if p.have == p.size && len(p.pos) == k0+1 && k0+nv <= p.np {
		return p.walkStrings(v, nv)
	}
	if err := p.strings(k0 + nv); err != nil {
		return err
	}
	pos := p.pos[k0 : k0+nv+1]
	total := uint64(pos[nv]-pos[0]) - 4*uint64(nv)
	if uint64(len(v.Bytes))+total > vec.MaxStringBytes {
		return errors.New("more than 4 GiB of strings in one row group")
	}
	v.Bytes = slices.Grow(v.Bytes, int(total))
	v.Offsets = slices.Grow(v.Offsets, nv)
	b, out := v.Bytes, p.out
	for k := range nv {
		b = append(b, out[pos[k]+4:pos[k+1]]...)
		v.Offsets = append(v.Offsets, uint32(len(b)))
	}
	v.Bytes = b
	return nil
}

// stringEnd returns the end of the PLAIN string whose 4-byte length is
// at out[at:], the offset past its bytes, and whether both lie inside out.
func stringEnd(out []byte, at int) (int, bool) {
	if at+4 > len(out) {
		return 0, false
	}
	end := at + 4 + int(binary.LittleEndian.Uint32(out[at:]))
	return end, end <= len(out) && end >= at
}

// badString is the error for the string at out[at:] stringEnd refused.
func badString(out []byte, at int) error {
	if at+4 > len(out) {
		return fmt.Errorf("%w: a string's length at %d in a page of %d", errCorrupt, at, len(out))
	}
	n := binary.LittleEndian.Uint32(out[at:])
	return fmt.Errorf("%w: a string of %d bytes at %d in a page of %d", errCorrupt, n, at, len(out))
}

// appendPlain appends the bytes of the string out[at:end] (its length
// first) to b. A string of at most 64 bytes is copied as one 64-byte
// block, without a call or a branch on its length, which strings of mixed
// lengths (URLs) mispredict: the bytes past it are overwritten by the
// next. The block may read past the page's end, within its buffer.
func appendPlain(b, out []byte, at, end int) []byte {
	if n := len(b); end-at-4 <= 64 && cap(b)-n >= 64 && at+68 <= cap(out) {
		*(*[64]byte)(b[n : n+64]) = *(*[64]byte)(out[at+4 : at+68])
		return b[:n+end-at-4]
	}
	return append(b, out[at+4:end]...)
}

// walkStrings appends the page's next nv strings, those after the last
// one walked, to v, walking them as it copies them: one pass over the
// page's bytes, decompressed whole. It checks what strings does.
func (p *plainPage) walkStrings(v *vec.Vector, nv int) error {
	out, pos := p.out[:p.size], p.pos
	at := int(pos[len(pos)-1])
	b := v.Bytes
	v.Offsets = slices.Grow(v.Offsets, nv)
	for range nv {
		end, ok := stringEnd(out, at)
		if !ok {
			return badString(out, at)
		}
		b = appendPlain(b, out, at, end)
		v.Offsets = append(v.Offsets, uint32(len(b)))
		pos = append(pos, uint32(end))
		at = end
	}
	if uint64(len(b)) > vec.MaxStringBytes {
		return errors.New("more than 4 GiB of strings in one row group")
	}
	v.Bytes, p.pos = b, pos
	if len(pos) == p.np+1 && at != len(out) {
		return fmt.Errorf("%w: %d strings end at byte %d of a page of %d", errCorrupt, p.np, at, len(out))
	}
	return nil
}

// values returns the page's first n fixed-width values at least,
// decompressing them if need be.
func (p *plainPage) values(n int) (encoding.Values, error) {
	if p.width == 0 {
		return encoding.Values{}, fmt.Errorf("internal error: values of a page of strings")
	}
	if err := p.ensure(n * p.width); err != nil {
		return encoding.Values{}, err
	}
	b := p.out[:p.have-p.have%p.width]
	switch p.phys {
	case format.Int32:
		return encoding.Int32ValuesFromBytes(b), nil
	case format.Int64:
		return encoding.Int64ValuesFromBytes(b), nil
	case format.Float:
		return encoding.FloatValuesFromBytes(b), nil
	default:
		return encoding.DoubleValuesFromBytes(b), nil
	}
}

// snappyPrefix decompresses a SNAPPY block from its start, as far as it
// is asked to: s is the position in src, d the bytes of dst written.
type snappyPrefix struct {
	src  []byte
	s, d int
	lit  int // bytes at s of a literal partly copied
}

// snappyOvershoot is the most bytes decode writes past the n asked for:
// a copy's longest length.
const snappyOvershoot = 64

// decode decompresses the block, size bytes long, into dst until at least
// n bytes are written or the block ends, and returns the bytes written.
// dst holds n+snappyOvershoot bytes at least, or size. A corrupt block is
// an error, never a write outside dst.
func (z *snappyPrefix) decode(dst []byte, size, n int) (int, error) {
	if len(dst) < min(n+snappyOvershoot, size) {
		return 0, fmt.Errorf("internal error: a buffer of %d bytes to decompress %d of %d", len(dst), n, size)
	}
	src, s, d, lit := z.src, z.s, z.d, z.lit
	bad := func() (int, error) {
		return 0, fmt.Errorf("%w: SNAPPY block corrupt at byte %d", errCorrupt, s)
	}
	for d < n {
		if lit > 0 {
			// A literal is copied only as far as asked: an incompressible
			// page is one literal.
			k := min(lit, n-d)
			copy(dst[d:d+k], src[s:s+k])
			s, d, lit = s+k, d+k, lit-k
			continue
		}
		if s >= len(src) {
			break
		}
		length, offset, next, ok := snappyTag(src, s)
		if !ok {
			return bad()
		}
		if offset == 0 {
			s, lit = next, length
			if lit > len(src)-s || lit > size-d {
				return bad()
			}
			continue
		}
		s = next
		if offset > d || length > size-d {
			return bad()
		}
		if offset >= length {
			copy(dst[d:d+length], dst[d-offset:])
		} else {
			for i := 0; i < length; i++ {
				dst[d+i] = dst[d-offset+i]
			}
		}
		d += length
	}
	if d == size && s != len(src) {
		return bad()
	}
	if s >= len(src) && d != size {
		return 0, fmt.Errorf("%w: the page decompresses to %d bytes, the header says %d", errCorrupt, d, size)
	}
	z.s, z.d, z.lit = s, d, lit
	return d, nil
}
