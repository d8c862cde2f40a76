package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// pageReader reads the pages of one column chunk. It reads and checks each
// page itself and leaves parquet-go only the decoding of uncompressed page
// bytes into values: it verifies the page's CRC when the writer wrote one,
// decompresses the page with the chunk's own codec into a buffer of exactly
// the size the header declares, and fails, naming the page and the codec,
// when the page does not decompress to that size. parquet-go's own reading
// of compressed pages could not be trusted with that: v0.32.0 returned a
// stale buffer for LZ4_RAW pages (its issue #608), its LZ4 decoder doubles
// its buffer without bound on a corrupt block, it accepts a page that
// decompresses to another size than its header says, it cannot read the
// Hadoop-framed LZ4 codec, and it decodes every chunk of a column with the
// codec of the first row group's chunk.
//
// The decoding is done by a "bare" column (see bareColumns): the same
// column of a copy of the file's schema without row groups, which has no
// codec, so that parquet-go takes the page bytes it is given as they are.
type pageReader struct {
	r     io.ReaderAt
	col   *parquet.Column
	codec format.CompressionCodec
	phys  format.Type
	walk  *headerWalk // the chunk's pages, their headers checked as they are reached
	// verify: check the pages' CRCs (Reader.VerifyChecksums)
	verify bool
	next   int // pages read
	dict   parquet.Dictionary
	raw    []byte // the page as read, reused from page to page
	out    []byte // a data page's bytes decompressed, reused likewise
	plain  []byte // a delta page's values made PLAIN, reused likewise
	dec    decompressors
	// plainOK: PLAIN pages of the column are read as plainPages (a
	// required column of a conversion they serve); pos is their string
	// positions, reused from page to page.
	plainOK bool
	pos     []uint32
	prefix  []byte // a plainPage's values decompressed a prefix at a time
	state   error  // a sticky error: once a page failed, every read fails
	// m maps the chunk's pages, when they are read that way (see
	// chunkMap); hdr holds a mapped page's header, copied out of it.
	m   *chunkMap
	hdr []byte
	// ahead: the rows of the next page on about to be converted. A
	// mapped page whose conversion decompresses it whole (see
	// plainPage.ensure) is decompressed whole as it is read, straight
	// from the mapping, rather than copied out of it to be decompressed
	// later.
	ahead int
}

// readAhead tells pages, when a pageReader, how many rows of the next
// page on are about to be converted.
func readAhead(pages parquet.Pages, rows int) {
	if pr, ok := pages.(*pageReader); ok {
		pr.ahead = rows
	}
}

// whole reports whether converting pr.ahead rows of a plainPage of pr's
// with np rows decompresses it whole: they are all of its rows, their
// values reach past lazyFirst, or their strings' lengths past lazyPrefix.
func (pr *pageReader) whole(np int) bool {
	if pr.ahead >= np {
		return true
	}
	if w, _ := plainWidth(pr.phys); w > 0 {
		return int64(pr.ahead)*int64(w) > lazyFirst
	}
	return 4*int64(pr.ahead) > lazyPrefix
}

// mapPages makes pr read its pages through m. A reader is Closed once
// read (or abandoned); should one be dropped without, the mapping is
// released when the reader is collected.
func (pr *pageReader) mapPages(m *chunkMap) {
	pr.m = m
	runtime.AddCleanup(pr, func(m *chunkMap) { m.unmap() }, m)
}

// unmap releases pr's mapping, if any: once its chunk is read, or a read
// failed.
func (pr *pageReader) unmap() {
	if pr.m != nil {
		pr.m.unmap()
		pr.m = nil
	}
}

// ReadPage returns the next data page of the chunk, or io.EOF after the
// last one. The page is valid until the next call: its bytes are reused
// for the next page (both readers of pages, rowGroup and ColumnStream,
// release a page before they read the next).
func (pr *pageReader) ReadPage() (parquet.Page, error) {
	if pr.state != nil {
		return nil, pr.state
	}
	for !pr.walk.done() {
		i := pr.next
		pr.next++
		loc, err := pr.walk.next()
		if err != nil {
			pr.unmap()
			pr.state = fmt.Errorf("page %d: %w", i, err)
			return nil, pr.state
		}
		p, err := pr.readPage(loc)
		if err != nil {
			pr.unmap()
			pr.state = fmt.Errorf("page %d at offset %d (%s): %w", i, loc.pos, codecName(pr.codec), err)
			return nil, pr.state
		}
		if pr.walk.done() {
			pr.unmap()
		}
		if p != nil {
			return p, nil
		}
	}
	return nil, io.EOF
}

// SeekToRow is not supported: the engine reads chunks from their start.
func (pr *pageReader) SeekToRow(int64) error {
	return errors.New("storage: page reader cannot seek")
}

// Close releases the reader's mapping of the file, if any; the reader
// holds no file handle of its own.
func (pr *pageReader) Close() error {
	pr.unmap()
	return nil
}

// readPage reads the page at loc: a data page is returned, a dictionary
// page is kept for the pages after it (returning nil).
func (pr *pageReader) readPage(loc pageLoc) (parquet.Page, error) {
	// One read for the page and the next page's header after it.
	n, ahead := loc.header+loc.size, pr.walk.readLen()
	if pr.m != nil {
		if b, ok := pr.m.bytes(loc.pos, ahead); ok {
			return pr.mappedPage(loc, b, n)
		}
	}
	if cap(pr.raw) < ahead {
		pr.raw = make([]byte, ahead)
	}
	if _, err := pr.r.ReadAt(pr.raw[:ahead], loc.pos); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading page: %w", err)
	}
	pr.walk.skip(pr.raw[:ahead])
	return pr.decodePage(loc, pr.raw[:n], false)
}

// mappedPage reads the page at loc from b, the bytes of the file from the
// page on as readPage reads them, mapped: the only code that touches the
// mapping. A fault there (the file was truncated) is an error, not a
// crash; no page it returns refers to the mapping.
func (pr *pageReader) mappedPage(loc pageLoc, b []byte, n int) (p parquet.Page, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if ferr := pr.m.fault(r); ferr != nil {
				p, err = nil, ferr
				return
			}
			panic(r)
		}
	}()
	pr.walk.skip(b)
	return pr.decodePage(loc, b[:n], true)
}

// decodePage decodes the page raw, at loc. mapped says raw is a mapping
// of the file, which the page returned must not refer to.
func (pr *pageReader) decodePage(loc pageLoc, raw []byte, mapped bool) (parquet.Page, error) {
	var h format.PageHeader
	hdr := raw[:loc.header]
	if mapped {
		// The decoded header may refer to the bytes it is decoded from.
		pr.hdr = append(pr.hdr[:0], hdr...)
		hdr = pr.hdr
	}
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), hdr, &h); err != nil {
		return nil, fmt.Errorf("%w: page header: %v", errCorrupt, err)
	}
	body := raw[loc.header:]
	if loc.crc && pr.verify {
		if got := crc32.ChecksumIEEE(body); got != uint32(h.CRC) {
			return nil, fmt.Errorf("%w: CRC mismatch: the header says %08x, the page's bytes give %08x", errCorrupt, uint32(h.CRC), got)
		}
	}
	if h.UncompressedPageSize < 0 {
		return nil, fmt.Errorf("%w: uncompressed page size %d", errCorrupt, h.UncompressedPageSize)
	}
	size := int(h.UncompressedPageSize)
	switch h.Type {
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid {
			return nil, fmt.Errorf("%w: dictionary page without its header", errCorrupt)
		}
		if pr.dict != nil {
			return nil, fmt.Errorf("%w: a second dictionary page", errCorrupt)
		}
		// The dictionary may refer to its page's bytes for as long as the
		// chunk is read: they are its own.
		data := make([]byte, size)
		if err := pr.dec.decompressInto(pr.codec, data, body); err != nil {
			return nil, err
		}
		d, err := pr.col.DecodeDictionary(headerOf[parquet.DictionaryPageHeader](&h.DictionaryPageHeader.V), data)
		if err != nil {
			return nil, fmt.Errorf("decoding dictionary: %w", err)
		}
		pr.dict = d
		return nil, nil
	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return nil, fmt.Errorf("%w: data page without its header", errCorrupt)
		}
		v := &h.DataPageHeader.V
		if err := pr.needDict(v.Encoding); err != nil {
			return nil, err
		}
		if pr.plainOK && v.Encoding == format.Plain {
			p, err := pr.plainPage(int(v.NumValues), pr.codec, body, size, mapped)
			if err != nil {
				return nil, err
			}
			return p, nil
		}
		data := body
		if pr.codec == format.Uncompressed {
			if len(body) != size {
				return nil, fmt.Errorf("%w: an uncompressed page of %d bytes, the header says %d", errCorrupt, len(body), size)
			}
			if mapped {
				data = pr.outBuf(size)
				copy(data, body)
			}
		} else {
			data = pr.outBuf(size)
			if err := pr.dec.decompressInto(pr.codec, data, body); err != nil {
				return nil, err
			}
		}
		if pr.phys == format.Int32 && v.Encoding == format.DeltaBinaryPacked {
			at, err := levelsV1(data, v, pr.col)
			if err != nil {
				return nil, err
			}
			if pr.plain, err = deltaInt32Plain(append(pr.plain[:0], data[:at]...), data[at:], int(v.NumValues)); err != nil {
				return nil, err
			}
			data = pr.plain
			v.Encoding = format.Plain
		}
		return pr.col.DecodeDataPageV1(headerOf[parquet.DataPageHeaderV1](v), data, pr.dict)
	case format.DataPageV2:
		if !h.DataPageHeaderV2.Valid {
			return nil, fmt.Errorf("%w: data page v2 without its header", errCorrupt)
		}
		v := &h.DataPageHeaderV2.V
		if err := pr.needDict(v.Encoding); err != nil {
			return nil, err
		}
		levels := int64(v.RepetitionLevelsByteLength) + int64(v.DefinitionLevelsByteLength)
		if v.RepetitionLevelsByteLength < 0 || v.DefinitionLevelsByteLength < 0 || levels > int64(len(body)) || levels > int64(size) {
			return nil, fmt.Errorf("%w: levels of %d+%d bytes in a page of %d (%d uncompressed)", errCorrupt,
				v.RepetitionLevelsByteLength, v.DefinitionLevelsByteLength, len(body), size)
		}
		compressed := !v.IsCompressed.Valid || v.IsCompressed.V
		if pr.plainOK && v.Encoding == format.Plain && levels == 0 && v.NumNulls == 0 && v.NumRows == v.NumValues {
			codec := pr.codec
			if !compressed {
				codec = format.Uncompressed
			}
			p, err := pr.plainPage(int(v.NumValues), codec, body, size, mapped)
			if err != nil {
				return nil, err
			}
			return p, nil
		}
		var data []byte
		if pr.codec == format.Uncompressed || !compressed {
			if len(body) != size {
				return nil, fmt.Errorf("%w: an uncompressed page of %d bytes, the header says %d", errCorrupt, len(body), size)
			}
			data = body
			if mapped {
				data = pr.outBuf(size)
				copy(data, body)
			}
		} else {
			data = pr.outBuf(size)
			copy(data, body[:levels])
			if err := pr.dec.decompressInto(pr.codec, data[levels:], body[levels:]); err != nil {
				return nil, err
			}
		}
		if pr.phys == format.Int32 && v.Encoding == format.DeltaBinaryPacked {
			var err error
			if pr.plain, err = deltaInt32Plain(append(pr.plain[:0], data[:levels]...), data[levels:], int(v.NumValues)); err != nil {
				return nil, err
			}
			data = pr.plain
			v.Encoding = format.Plain
		}
		return pr.col.DecodeDataPageV2(headerOf[parquet.DataPageHeaderV2](v), data, pr.dict)
	case format.IndexPage:
		return nil, nil
	}
	return nil, fmt.Errorf("%w: unknown page type %d", errCorrupt, h.Type)
}

// plainPage returns a plainPage of np values of the column, src
// compressed with codec, size bytes decompressed. mapped says src is a
// mapping of the file, which the page must not refer to.
func (pr *pageReader) plainPage(np int, codec format.CompressionCodec, src []byte, size int, mapped bool) (*plainPage, error) {
	var prefix []byte // nil: decompressed whole now
	if codec == format.Snappy && size > lazyPrefix && !(mapped && pr.whole(np)) {
		if pr.prefix == nil {
			pr.prefix = make([]byte, lazyPrefix+snappyOvershoot)
		}
		prefix = pr.prefix
		if mapped {
			// Decompressed a prefix at a time, after readPage: copied.
			pr.raw = append(pr.raw[:0], src...)
			src = pr.raw
		}
	}
	if pr.phys == format.ByteArray && cap(pr.pos) < np+1 && np <= size/4 {
		pr.pos = make([]uint32, 0, np+1)
	}
	p, err := newPlainPage(np, pr.phys, codec, src, size, func() []byte { return pr.outBuf(size) }, prefix, pr.pos, &pr.dec)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// outBuf returns pr.out sized to n bytes.
func (pr *pageReader) outBuf(n int) []byte {
	if cap(pr.out) < n {
		pr.out = make([]byte, n)
	}
	return pr.out[:n]
}

// needDict fails when a dictionary-encoded page comes before any
// dictionary page.
func (pr *pageReader) needDict(enc format.Encoding) error {
	if (enc == format.RLEDictionary || enc == format.PlainDictionary) && pr.dict == nil {
		return fmt.Errorf("%w: a dictionary-encoded page without a dictionary page", errCorrupt)
	}
	return nil
}

// levelsV1 returns the offset of the values in the uncompressed data page
// v1 data: after its repetition and definition levels.
func levelsV1(data []byte, v *format.DataPageHeader, col *parquet.Column) (int, error) {
	at := 0
	for _, lv := range []struct {
		max int
		enc format.Encoding
	}{{col.MaxRepetitionLevel(), v.RepetitionLevelEncoding}, {col.MaxDefinitionLevel(), v.DefinitionLevelEncoding}} {
		if lv.max == 0 {
			continue
		}
		switch lv.enc {
		case format.RLE:
			if len(data)-at < 4 {
				return 0, fmt.Errorf("%w: page too short for its levels", errCorrupt)
			}
			n := int64(binary.LittleEndian.Uint32(data[at:]))
			if n > int64(len(data)-at-4) {
				return 0, fmt.Errorf("%w: levels of %d bytes in a page of %d", errCorrupt, n, len(data))
			}
			at += 4 + int(n)
		case format.BitPacked:
			width := int64(bits(lv.max))
			n := (int64(v.NumValues)*width + 7) / 8
			if v.NumValues < 0 || n > int64(len(data)-at) {
				return 0, fmt.Errorf("%w: levels of %d bytes in a page of %d", errCorrupt, n, len(data))
			}
			at += int(n)
		default:
			return 0, fmt.Errorf("%w: levels encoded as %s", errCorrupt, lv.enc)
		}
	}
	return at, nil
}

func bits(x int) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// deltaInt32Plain decodes the DELTA_BINARY_PACKED values of an INT32
// column, src, into PLAIN ones appended to dst. parquet-go cannot be left
// to do it for files DuckDB writes with PARQUET_VERSION V2: the format's
// arithmetic on INT32 values wraps, and DuckDB, computing a UINTEGER
// column's deltas in 64 bits, writes a first value above 2^31-1 (which
// parquet-go refuses: "first value out of range") and miniblocks 33 bits
// wide (which parquet-go decodes into wrong values). Here the first value
// and the deltas are added in 64 bits and the sums cut to 32, which is
// the wrapping arithmetic the format specifies.
// The page holds at most maxValues values.
func deltaInt32Plain(dst, src []byte, maxValues int) ([]byte, error) {
	bad := func(what string) ([]byte, error) {
		return nil, fmt.Errorf("%w: DELTA_BINARY_PACKED: %s", errCorrupt, what)
	}
	var hdr [3]uint64 // block size, miniblocks per block, value count
	for k := range hdr {
		x, n := binary.Uvarint(src)
		if n <= 0 {
			return bad("truncated header")
		}
		hdr[k], src = x, src[n:]
	}
	blockSize, miniBlocks, count := hdr[0], hdr[1], hdr[2]
	if blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<20 || miniBlocks == 0 ||
		blockSize%miniBlocks != 0 || (blockSize/miniBlocks)%32 != 0 {
		return bad(fmt.Sprintf("blocks of %d values in %d miniblocks", blockSize, miniBlocks))
	}
	if count > uint64(max(maxValues, 0)) {
		return bad(fmt.Sprintf("%d values in a page of %d", count, maxValues))
	}
	first, n := binary.Varint(src)
	if n <= 0 {
		return bad("truncated first value")
	}
	src = src[n:]
	if count == 0 {
		return dst, nil
	}
	perMini := int(blockSize / miniBlocks)
	dst = slicesGrow(dst, 4*int(count))
	last := first
	dst = binary.LittleEndian.AppendUint32(dst, uint32(last))
	left := int(count) - 1
	for left > 0 {
		minDelta, n := binary.Varint(src)
		if n <= 0 {
			return bad("truncated block")
		}
		src = src[n:]
		if uint64(len(src)) < miniBlocks {
			return bad("truncated block")
		}
		widths := src[:miniBlocks]
		src = src[miniBlocks:]
		for _, w := range widths {
			if left == 0 {
				break
			}
			if w > 64 {
				return bad(fmt.Sprintf("a miniblock %d bits wide", w))
			}
			size := perMini * int(w) / 8
			if len(src) < size {
				// The last miniblock may be cut short of its padding.
				size = len(src)
			}
			mb := src[:size]
			src = src[size:]
			k := min(perMini, left)
			if int(w)*k > 8*len(mb) {
				return bad("truncated miniblock")
			}
			for i := range k {
				last += minDelta + int64(unpack(mb, i*int(w), int(w)))
				dst = binary.LittleEndian.AppendUint32(dst, uint32(last))
			}
			left -= k
		}
	}
	return dst, nil
}

// unpack returns the w-bit value at bit offset off of b, packed from the
// least significant bit on.
func unpack(b []byte, off, w int) uint64 {
	var x uint64
	for got := 0; got < w; {
		i, sh := off/8, off%8
		take := min(8-sh, w-got)
		x |= uint64(b[i]>>sh&(1<<take-1)) << got
		got += take
		off += take
	}
	return x
}

func slicesGrow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		return nb
	}
	return b
}

// headerOf converts a page header of parquet-go's format package to
// parquet-go's wrapper of it (H), which it has no exported constructor
// for. Each wrapper is a struct holding only the pointer; checkHeaderLayout
// verifies that before any conversion.
func headerOf[H any, F any](f *F) H {
	return *(*H)(unsafe.Pointer(&f))
}

// checkHeaderLayout verifies what headerOf relies on, for the wrappers it
// converts to.
var checkHeaderLayout = sync.OnceValue(func() error {
	for _, c := range []struct{ wrapper, field reflect.Type }{
		{reflect.TypeFor[parquet.DictionaryPageHeader](), reflect.TypeFor[*format.DictionaryPageHeader]()},
		{reflect.TypeFor[parquet.DataPageHeaderV1](), reflect.TypeFor[*format.DataPageHeader]()},
		{reflect.TypeFor[parquet.DataPageHeaderV2](), reflect.TypeFor[*format.DataPageHeaderV2]()},
	} {
		if c.wrapper.NumField() != 1 || c.wrapper.Field(0).Type != c.field {
			return fmt.Errorf("storage: parquet-go's %s is no longer a %s alone; update pages.go", c.wrapper, c.field)
		}
	}
	return nil
})

// bareColumns returns the leaf columns of a copy of f's schema that has no
// row groups, indexed like f's leaves: parquet-go gives a column the codec
// of its first chunk, and these have none, so they decode page bytes as
// given.
func bareColumns(f *parquet.File) ([]*parquet.Column, error) {
	if err := checkHeaderLayout(); err != nil {
		return nil, err
	}
	md := *f.Metadata()
	md.RowGroups, md.NumRows = nil, 0
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	b := make([]byte, 0, len(footer)+12)
	b = append(b, "PAR1"...)
	b = append(b, footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	b = append(b, "PAR1"...)
	bare, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("opening the schema: %w", err)
	}
	var leaves []*parquet.Column
	var walk func(c *parquet.Column)
	walk = func(c *parquet.Column) {
		if c.Leaf() {
			leaves = append(leaves, c)
			return
		}
		for _, ch := range c.Columns() {
			walk(ch)
		}
	}
	walk(bare.Root())
	for i, c := range leaves {
		if c.Index() != i || c.Compression() != nil {
			return nil, fmt.Errorf("storage: unexpected bare column %d (%s)", i, c.Name())
		}
	}
	return leaves, nil
}

// codecName names a codec as the format does, with the Hadoop framing of
// LZ4 made explicit.
func codecName(c format.CompressionCodec) string {
	switch c {
	case format.Lz4:
		return "LZ4 (Hadoop)"
	case format.Lz4Raw:
		return "LZ4_RAW"
	}
	return c.String()
}

// decompressors decompresses pages, keeping the stream decoders of one
// chunk from page to page.
type decompressors struct {
	gz *gzip.Reader
}

// decompressInto decompresses src with codec into dst, which it must fill
// exactly. No codec writes or allocates beyond len(dst), whatever src
// holds.
func (d *decompressors) decompressInto(codec format.CompressionCodec, dst, src []byte) error {
	size := len(dst)
	short := func(n int) error {
		return fmt.Errorf("%w: the page decompresses to %d bytes, the header says %d", errCorrupt, n, size)
	}
	if size == 0 && len(src) == 0 {
		return nil // the values of a page of NULLs, say
	}
	switch codec {
	case format.Uncompressed:
		if len(src) != size {
			return fmt.Errorf("%w: an uncompressed page of %d bytes, the header says %d", errCorrupt, len(src), size)
		}
		copy(dst, src)
		return nil
	case format.Snappy:
		n, err := s2.DecodedLen(src)
		if err != nil {
			return fmt.Errorf("%w: %v", errCorrupt, err)
		}
		if n != size {
			return short(n)
		}
		return decodeSnappy(dst, src)
	case format.Lz4Raw:
		n, err := lz4.UncompressBlock(src, dst)
		if err != nil {
			return fmt.Errorf("%w: LZ4 block does not decompress into the header's %d bytes: %v", errCorrupt, size, err)
		}
		if n != size {
			return short(n)
		}
		return nil
	case format.Lz4:
		// Hadoop's framing: blocks of a big-endian uncompressed and
		// compressed length and an LZ4 block. Writers before it was
		// specified wrote a bare LZ4 block under this codec; like Arrow,
		// read such a page as one when the framing does not fit.
		if hadoopLZ4(dst, src) {
			return nil
		}
		n, err := lz4.UncompressBlock(src, dst)
		if err != nil {
			return fmt.Errorf("%w: neither Hadoop-framed LZ4 nor an LZ4 block of the header's %d bytes: %v", errCorrupt, size, err)
		}
		if n != size {
			return short(n)
		}
		return nil
	case format.Gzip:
		var err error
		if d.gz == nil {
			d.gz, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = d.gz.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return fmt.Errorf("%w: %v", errCorrupt, err)
		}
		return readExactly(d.gz, dst)
	case format.Brotli:
		return readExactly(brotli.NewReader(bytes.NewReader(src)), dst)
	case format.Zstd:
		var h zstd.Header
		if err := h.Decode(src); err != nil {
			return fmt.Errorf("%w: %v", errCorrupt, err)
		}
		if h.HasFCS && h.FrameContentSize > uint64(size) && !h.Skippable {
			return short(int(min(h.FrameContentSize, math.MaxInt32)))
		}
		zd, err := zstdDecoder()
		if err != nil {
			return err
		}
		out, err := zd.DecodeAll(src, dst[:0])
		if err != nil {
			return fmt.Errorf("%w: %v", errCorrupt, err)
		}
		if len(out) != size {
			return short(len(out))
		}
		if size > 0 && &out[0] != &dst[0] {
			copy(dst, out)
		}
		return nil
	}
	return fmt.Errorf("unsupported compression codec %s", codecName(codec))
}

// hadoopLZ4 decodes src as Hadoop-framed LZ4 into dst, reporting whether
// it was that and filled dst exactly.
func hadoopLZ4(dst, src []byte) bool {
	o := 0
	for len(src) > 0 {
		if len(src) < 8 {
			return false
		}
		un := int(binary.BigEndian.Uint32(src))
		cn := int(binary.BigEndian.Uint32(src[4:]))
		src = src[8:]
		if cn > len(src) || un > len(dst)-o {
			return false
		}
		n, err := lz4.UncompressBlock(src[:cn], dst[o:o+un])
		if err != nil || n != un {
			return false
		}
		o += un
		src = src[cn:]
	}
	return o == len(dst) && len(dst) > 0
}

// readExactly fills dst from r and checks that r ends there.
func readExactly(r io.Reader, dst []byte) error {
	n, err := io.ReadFull(r, dst)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return fmt.Errorf("%w: the page decompresses to %d bytes, the header says %d", errCorrupt, n, len(dst))
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errCorrupt, err)
	}
	var one [1]byte
	switch m, err := io.ReadFull(r, one[:]); {
	case m > 0:
		return fmt.Errorf("%w: the page decompresses to more than the header's %d bytes", errCorrupt, len(dst))
	case err != io.EOF:
		return fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return nil
}

// zstdDecoder is a decoder shared by all readers (DecodeAll is safe for
// concurrent use). Its memory is bounded like a page: 1 GiB.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
})
