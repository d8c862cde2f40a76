package storage

import (
	"errors"
	"fmt"
	"io"
)

// pageLoc is where a page of a column chunk lies in the file.
type pageLoc struct {
	pos    int64 // offset of the page header
	header int   // bytes of the header
	size   int   // bytes of the page after the header (compressed_page_size)
	crc    bool  // the header holds a CRC of the page
}

// checkChunkHeaders walks the page headers of a column chunk occupying
// [start, end) of r, checks that every length inside them fits in the
// chunk and that the uncompressed sizes are plausible, and returns where
// the pages are. Only the headers are read, a few KiB per page. The
// readers of pages do not call it: they check each header as they reach
// it (headerWalk), so that a query reading ten rows reads the headers of
// the pages it reads, not those of the whole chunk.
func checkChunkHeaders(r io.ReaderAt, start, end int64) ([]pageLoc, error) {
	w, err := newHeaderWalk(r, start, end)
	if err != nil {
		return nil, err
	}
	var locs []pageLoc
	for !w.done() {
		loc, err := w.next()
		if err != nil {
			return nil, err
		}
		locs = append(locs, loc)
		w.skip(nil)
	}
	return locs, nil
}

// headerWalk checks the page headers of a column chunk occupying
// [start, end) of r one page at a time: that every length inside a header
// fits in the chunk and that the uncompressed size is plausible. It runs
// before any header is decoded by parquet-go's thrift decoder, which
// allocates a buffer of whatever length a (corrupt) header declares, up to
// 2 GiB, before reading it.
type headerWalk struct {
	r        io.ReaderAt
	pos, end int64
	ahead    []byte // bytes of the file from pos on, already read
	buf      []byte // holds ahead's bytes when they were read here
	loc      pageLoc
	have     bool // loc is the page at pos, checked
}

// headerAhead is the bytes read past a page for the next page's header,
// in the same read as the page: most headers are a few dozen bytes.
const headerAhead = 4096

// headerKeep is the bytes of those skip keeps for the next header: most
// page headers, statistics of short strings included, fit; a longer one
// is read again. Copying all of them cost more than the header.
const headerKeep = 1024

func newHeaderWalk(r io.ReaderAt, start, end int64) (*headerWalk, error) {
	if start < 0 || end < start {
		return nil, fmt.Errorf("%w: column chunk range [%d,%d)", errCorrupt, start, end)
	}
	return &headerWalk{r: r, pos: start, end: end}, nil
}

// done reports whether every page of the chunk was walked.
func (w *headerWalk) done() bool { return w.pos >= w.end }

// next checks the header of the page at the walk's position and returns
// where the page lies.
func (w *headerWalk) next() (pageLoc, error) {
	if w.have {
		return w.loc, nil
	}
	pos, end := w.pos, w.end
	size := min(int64(headerAhead), end-pos)
	if len(w.ahead) > 0 {
		size = min(size, int64(len(w.ahead))) // what skip kept, first
	}
	for {
		if int64(len(w.ahead)) < size {
			if int64(cap(w.buf)) < size {
				w.buf = make([]byte, size)
			}
			n, err := w.r.ReadAt(w.buf[:size], pos)
			if int64(n) < size {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return pageLoc{}, fmt.Errorf("%w: reading page header: %v", errCorrupt, err)
			}
			w.ahead = w.buf[:size]
		}
		p := thriftScan{b: w.ahead}
		compressed, crc, err := p.pageHeader()
		if errors.Is(err, errShort) && int64(len(w.ahead)) < end-pos {
			size = min(max(size, int64(len(w.ahead)))*4, end-pos)
			continue
		}
		if err != nil {
			return pageLoc{}, fmt.Errorf("%w: page header at offset %d: %v", errCorrupt, pos, err)
		}
		if compressed < 0 || int64(compressed) > end-pos-int64(p.i) {
			return pageLoc{}, fmt.Errorf("%w: page at offset %d claims %d bytes, the chunk has %d left",
				errCorrupt, pos, compressed, end-pos-int64(p.i))
		}
		w.loc, w.have = pageLoc{pos: pos, header: p.i, size: int(compressed), crc: crc}, true
		return w.loc, nil
	}
}

// skip moves past the page next returned. page, when not nil, holds the
// bytes of the file from the page's header on, as far as the caller read
// them: those past the page are the next header's, read ahead.
func (w *headerWalk) skip(page []byte) {
	n := w.loc.header + w.loc.size
	w.pos += int64(n)
	w.have = false
	switch {
	case len(page) > n:
		// Copied, as far as most headers go: the caller reuses page's
		// buffer for the next page. A longer header is read (next).
		w.buf = append(w.buf[:0], page[n:min(len(page), n+headerKeep)]...)
		w.ahead = w.buf
	case len(w.ahead) > n:
		w.ahead = w.ahead[n:]
	default:
		w.ahead = nil
	}
}

// readLen returns the bytes a reader of the page next returned reads: the
// page and the header after it, if any, up to headerAhead bytes of it.
func (w *headerWalk) readLen() int {
	n := w.loc.header + w.loc.size
	return n + int(min(int64(headerAhead), w.end-w.pos-int64(n)))
}

var errShort = errors.New("header longer than the bytes read")

// thriftScan skips over thrift compact-protocol values, checking lengths.
type thriftScan struct {
	b     []byte
	i     int
	depth int
}

func (s *thriftScan) byte() (byte, error) {
	if s.i >= len(s.b) {
		return 0, errShort
	}
	c := s.b[s.i]
	s.i++
	return c, nil
}

func (s *thriftScan) uvarint() (uint64, error) {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		c, err := s.byte()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("varint too long")
}

// pageHeader scans a PageHeader struct and returns its field 3,
// compressed_page_size, and whether it has field 4, crc.
func (s *thriftScan) pageHeader() (compressed int32, crc bool, err error) {
	compressed = -1
	var uncompressed int64 = -1
	err = s.structFields(func(id int16, typ byte) (bool, error) {
		if id == 2 && typ == 5 {
			v, err := s.uvarint()
			if err != nil {
				return true, err
			}
			uncompressed = int64(int32(uint32(v>>1) ^ -uint32(v&1)))
			return true, nil
		}
		if id == 3 && typ == 5 {
			v, err := s.uvarint()
			if err != nil {
				return true, err
			}
			compressed = int32(uint32(v>>1) ^ -uint32(v&1))
			return true, nil
		}
		if id == 4 && typ == 5 {
			crc = true
		}
		return false, nil
	})
	if err == nil && compressed < 0 {
		err = errors.New("no compressed page size")
	}
	// parquet-go allocates the uncompressed size up front; refuse sizes no
	// real page has (over 1 GiB, or beyond any codec's ratio).
	if err == nil && (uncompressed < 0 || uncompressed > 1<<30 || uncompressed > 1<<20+4096*int64(compressed)) {
		err = fmt.Errorf("implausible uncompressed page size %d (compressed %d)", uncompressed, compressed)
	}
	return compressed, crc, err
}

// structFields scans struct fields until the stop field; visit may consume
// a field's value itself (returning true).
func (s *thriftScan) structFields(visit func(id int16, typ byte) (bool, error)) error {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > 32 {
		return errors.New("nesting too deep")
	}
	var id int16
	for {
		h, err := s.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil
		}
		typ := h & 0x0f
		if d := int16(h >> 4); d != 0 {
			id += d
		} else {
			v, err := s.uvarint()
			if err != nil {
				return err
			}
			id = int16(uint16(v>>1) ^ -uint16(v&1))
		}
		if visit != nil {
			done, err := visit(id, typ)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		if err := s.skip(typ); err != nil {
			return err
		}
	}
}

func (s *thriftScan) skip(typ byte) error {
	switch typ {
	case 1, 2: // booleans are in the type nibble
		return nil
	case 3:
		_, err := s.byte()
		return err
	case 4, 5, 6:
		_, err := s.uvarint()
		return err
	case 7:
		if len(s.b)-s.i < 8 {
			return errShort
		}
		s.i += 8
		return nil
	case 8:
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		if n > uint64(len(s.b)-s.i) {
			if n > 1<<26 {
				return fmt.Errorf("binary field of %d bytes", n)
			}
			return errShort
		}
		s.i += int(n)
		return nil
	case 9, 10: // list, set
		h, err := s.byte()
		if err != nil {
			return err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = s.uvarint(); err != nil {
				return err
			}
		}
		if n > uint64(len(s.b)-s.i) {
			return fmt.Errorf("list of %d elements in %d bytes", n, len(s.b)-s.i)
		}
		et := h & 0x0f
		for range n {
			if et == 1 || et == 2 { // a boolean element takes a byte
				et = 3
			}
			if err := s.skip(et); err != nil {
				return err
			}
		}
		return nil
	case 11: // map
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if n > uint64(len(s.b)-s.i) {
			return fmt.Errorf("map of %d entries in %d bytes", n, len(s.b)-s.i)
		}
		kv, err := s.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := s.skip(kv >> 4); err != nil {
				return err
			}
			if err := s.skip(kv & 0x0f); err != nil {
				return err
			}
		}
		return nil
	case 12:
		return s.structFields(nil)
	}
	return fmt.Errorf("unknown thrift type %d", typ)
}

// checkFooter validates the framing of a Parquet file and scans its footer
// (FileMetaData) before parquet-go decodes it: a corrupt list length there
// would make parquet-go attempt an allocation of any size, which can end
// the process with an out-of-memory error that recover cannot catch.
func checkFooter(r io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("%w: %d bytes is too small for a Parquet file", errCorrupt, size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("reading footer: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return fmt.Errorf("%w: missing PAR1 magic at the end (truncated?)", errCorrupt)
	}
	n := int64(uint32(tail[0]) | uint32(tail[1])<<8 | uint32(tail[2])<<16 | uint32(tail[3])<<24)
	if n > size-12 {
		return fmt.Errorf("%w: footer of %d bytes in a file of %d", errCorrupt, n, size)
	}
	meta := make([]byte, n)
	if _, err := r.ReadAt(meta, size-8-n); err != nil {
		return fmt.Errorf("reading footer: %w", err)
	}
	s := thriftScan{b: meta}
	if err := s.structFields(nil); err != nil {
		return fmt.Errorf("%w: footer: %v", errCorrupt, err)
	}
	return nil
}
