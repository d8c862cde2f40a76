package storage

import (
	"context"
	"errors"
	"fmt"
	"io"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
)

// ColumnStream reads one column of one row group a few rows at a time,
// reading a page only when the rows asked for reach it and converting only
// the rows asked for: a query that stops after ten rows reads one page per
// column, not the row group, and converts ten rows of it. A chunk
// already in the catalog's cache is served from there; a stream does not
// fill the cache. A ColumnStream is used by one goroutine; Close it.
type ColumnStream struct {
	rd    *Reader
	g, j  int
	rows  int // rows of the chunk
	pos   int // rows consumed
	whole *vec.Vector

	b       *columnBuilder
	pages   parquet.Pages
	cur     parquet.Page // the page being read, converted as rows are asked for
	pv      pageValues   // cur, checked
	curPos  int          // rows of cur consumed
	curK    int          // values present in those rows
	decoded int          // rows of the chunk's pages read so far

	spare *vec.Vector // given back by Recycle: the next Next converts into its arrays
	// lenSpare, given back by Recycle, holds NextTest's next byte lengths.
	lenSpare *vec.Vector
	// passed is the rows NextTest's or NextEq's last call passed, to
	// size the next call's selection.
	passed int
	// eqTmp holds the rows NextEq converts to compare them.
	eqTmp   *vec.Vector
	perByte int // estimated string bytes per row, to size a fresh vector's bytes

	// NextTest: the chunk's dictionary converted (a NULL after its
	// entries) and which of its entries pass, once tested; testTmp holds
	// the rows of a page without a dictionary while they are tested.
	dictVec  *vec.Vector
	dictPass []bool
	testTmp  *vec.Vector
	// selIdx, selDefs: the positions of the values NextSel picks out of
	// a page, and the definition levels of their rows.
	selIdx  []int32
	selDefs []byte

	// readOn: the reader goes on to the chunk's end (ReadOn);
	// pagesRead: the chunk's pages read so far.
	readOn    bool
	pagesRead int
}

// ReadOn tells the stream that its reader goes on to the end of the
// chunk, short of an error: it does not stop early, as a LIMIT's may. A
// page that a read opens but does not finish is then decompressed whole
// as it is read, straight from the file's mapping, since the next reads
// want the rest of it, rather than a prefix at a time (copied out of the
// mapping first) and then whole after all. A selection too sparse to
// want a row of most pages still decompresses a page only as far as it
// reads.
func (cs *ColumnStream) ReadOn() { cs.readOn = true }

// Stream returns a stream over column j (an index into Table.Columns) of
// row group g.
func (rd *Reader) Stream(ctx context.Context, g, j int) (*ColumnStream, error) {
	t := rd.t
	if g < 0 || g >= len(t.RowGroupRows) || j < 0 || j >= len(t.Columns) {
		return nil, fmt.Errorf("storage: %s: no column %d in row group %d", t.Path, j, g)
	}
	cs := &ColumnStream{rd: rd, g: g, j: j, rows: int(t.RowGroupRows[g])}
	if t.Columns[j].Type == vec.String && t.Rows > 0 {
		// The chunks' uncompressed size holds each string with a 4-byte
		// length (dictionary pages make it an underestimate; appending
		// grows the rest). Rounded up, and an eighth more: a morsel's
		// strings are as often longer than the average as shorter, and a
		// vector a little short of them grows by copying them all (URLs
		// of 28.8 bytes on average were given 28 a row, and nearly every
		// morsel of them was copied twice).
		avg := (t.decoded[j] - t.Rows*8 + t.Rows - 1) / t.Rows
		cs.perByte = int(max(0, avg-4+(avg-4)/8+1))
	}
	if vs, ok := rd.c.cache.peek(cacheKey{ident: t.ident(), col: t.Columns[j].Name, rowGroup: g}); ok {
		cs.whole = vs[0]
	}
	return cs, nil
}

// StreamOf returns a stream over v, a whole column chunk already in
// memory, for a reader that streams some columns of a row group and
// decodes the others whole.
func StreamOf(v *vec.Vector) *ColumnStream {
	return &ColumnStream{rows: v.Len, whole: v}
}

// Recycle gives back v, a vector Next returned, once neither the caller
// nor anything it handed v to uses it any more (a scan whose filter copied
// the passing rows out, say): the next Next converts into v's arrays
// instead of allocating new ones. Streaming a column allocates a morsel's
// worth of arrays per morsel; where nothing else the query holds is large,
// the Go heap stays small and the collector would run every few morsels.
// A vector served from memory (a chunk the cache holds) is not reused.
//
// A String stream also takes back an Int64 vector, for NextTest's byte
// lengths. Of a spare and a vector given back, the larger is kept: a
// filter's morsel of a few rows does not displace one sized for a morsel.
func (cs *ColumnStream) Recycle(v *vec.Vector) {
	if cs.whole != nil || v == nil || cs.b == nil {
		return
	}
	switch {
	case v.Type == cs.b.typ:
		if cs.spare == nil || vecCap(v) > vecCap(cs.spare) {
			cs.spare = v
		}
	case v.Type == vec.Int64 && cs.b.typ == vec.String:
		if cs.lenSpare == nil || cap(v.I64) > cap(cs.lenSpare.I64) {
			cs.lenSpare = v
		}
	}
}

// vecCap is the bytes v's arrays have room for.
func vecCap(v *vec.Vector) int {
	return 8*cap(v.I64) + 8*cap(v.F64) + cap(v.Bytes) + 4*cap(v.Offsets)
}

// selection returns an empty selection for a test of n rows, with room
// for as many rows as the stream's last test passed, and some: grown a
// doubling at a time from nothing, it cost more than the test where most
// rows pass (most URLs are not empty), and sized for every row, its
// zeroing did where few do.
func (cs *ColumnStream) selection(n int) []int32 {
	return make([]int32, 0, min(n, cs.passed+cs.passed/8+64))
}

// lengths returns an empty BIGINT vector for the byte lengths of n rows:
// the one given back by Recycle, or a new one.
func (cs *ColumnStream) lengths(n int) *vec.Vector {
	if v := cs.lenSpare; v != nil {
		cs.lenSpare = nil
		return &vec.Vector{Type: vec.Int64, I64: v.I64[:0]}
	}
	return vec.NewVector(vec.Int64, n)
}

// open starts reading the chunk's pages.
func (cs *ColumnStream) open() error {
	pages, _, err := cs.rd.chunkPages(cs.g, cs.j)
	if err != nil {
		return err
	}
	t := cs.rd.t
	cs.b = &columnBuilder{typ: t.Columns[cs.j].Type, conv: t.convs[cs.j], optional: t.optional[cs.j]}
	cs.rd.c.decodes.Add(1)
	cs.pages = pages
	return nil
}

// wrap names the stream's file, column and row group in err.
func (cs *ColumnStream) wrap(err error) error {
	t := cs.rd.t
	return fmt.Errorf("storage: %s: column %q, row group %d: %w", t.Path, t.Columns[cs.j].Name, cs.g, err)
}

// corrupt turns a parquet-go panic on a corrupt page into an error.
func (cs *ColumnStream) corrupt(err *error) {
	if p := recover(); p != nil {
		*err = cs.wrap(fmt.Errorf("%w: %v", errCorrupt, p))
	}
}

// page reads the next page into cs.cur, rows of which on are about to be
// converted.
func (cs *ColumnStream) page(rows int) (err error) {
	defer cs.corrupt(&err)
	cs.release()
	readAhead(cs.pages, rows)
	p, err := cs.pages.ReadPage()
	if err == io.EOF {
		return cs.wrap(fmt.Errorf("%w: pages end before the row group's %d rows", errCorrupt, cs.rows))
	}
	if err != nil {
		return cs.wrap(err)
	}
	defer func() {
		if err != nil {
			parquet.Release(p)
		}
	}()
	if len(p.RepetitionLevels()) > 0 {
		t := cs.rd.t
		return fmt.Errorf("storage: %s: column %q: repeated values are not supported", t.Path, t.Columns[cs.j].Name)
	}
	np := int(p.NumRows())
	if np <= 0 || cs.decoded+np > cs.rows {
		return cs.wrap(fmt.Errorf("%w: pages hold more than the row group's %d rows", errCorrupt, cs.rows))
	}
	pv, err := cs.b.check(p, np)
	if err != nil {
		return cs.wrap(err)
	}
	cs.cur, cs.pv, cs.curPos, cs.curK = p, pv, 0, 0
	cs.decoded += np
	cs.pagesRead++
	return nil
}

// take converts the current page's next k rows into rows [row, row+k)
// of v, which holds row rows.
func (cs *ColumnStream) take(v *vec.Vector, row, k int) (err error) {
	defer cs.corrupt(&err)
	cs.b.grow(v, row+k)
	next, err := cs.b.convert(v, &cs.pv, row, cs.curPos, cs.curPos+k, cs.curK)
	if err != nil {
		return cs.wrap(err)
	}
	v.Len = row + k
	cs.curPos, cs.curK = cs.curPos+k, next
	return nil
}

// skip moves past the current page's next k rows without converting them.
func (cs *ColumnStream) skip(k int) {
	from := cs.curPos
	cs.curPos += k
	if cs.pv.defs != nil {
		cs.curK += k - countNulls(cs.pv.defs[from:cs.curPos])
	} else {
		cs.curK += k
	}
}

// release gives the current page back to parquet-go's pools.
func (cs *ColumnStream) release() {
	if cs.cur != nil {
		parquet.Release(cs.cur)
		cs.cur, cs.pv = nil, pageValues{}
	}
}

func (cs *ColumnStream) curLeft() int {
	if cs.cur == nil {
		return 0
	}
	return cs.pv.np - cs.curPos
}

// Next returns the next n rows (fewer at the end of the row group, none
// after it), converted from the pages they are on into a vector of their own.
func (cs *ColumnStream) Next(ctx context.Context, n int) (*vec.Vector, error) {
	return cs.read(ctx, n, true)
}

// Skip moves past the next n rows without converting them (the pages they
// are on are still read: the files carry no page index we read).
func (cs *ColumnStream) Skip(ctx context.Context, n int) error {
	_, err := cs.read(ctx, n, false)
	return err
}

// NextSel returns rows sel (increasing indexes below n) of the next n
// rows, converted into one vector; the others are passed without being
// converted, and a page none of whose rows is selected is not
// decompressed.
func (cs *ColumnStream) NextSel(ctx context.Context, n int, sel []int32) (*vec.Vector, error) {
	n = max(0, min(n, cs.rows-cs.pos))
	if len(sel) > 0 && (sel[0] < 0 || int(sel[len(sel)-1]) >= n) {
		return nil, fmt.Errorf("internal error: rows %d to %d of %d", sel[0], sel[len(sel)-1], n)
	}
	if cs.whole != nil {
		v := cs.whole.Slice(cs.pos, cs.pos+n).Gather(sel)
		cs.pos += n
		return v, nil
	}
	if cs.pages == nil && n > 0 {
		if err := cs.open(); err != nil {
			return nil, err
		}
	}
	out := cs.vector(len(sel))
	if cs.b != nil && cs.b.typ == vec.String {
		if err := cs.nextSelStrings(ctx, n, sel, out); err != nil {
			return nil, err
		}
		cs.pos += n
		return out, nil
	}
	if err := cs.nextSelFixed(ctx, n, sel, out); err != nil {
		return nil, err
	}
	cs.pos += n
	return out, nil
}

// move passes the next k rows (not counted in cs.pos), converting them
// into rows [row, row+k) of out unless out is nil.
func (cs *ColumnStream) move(ctx context.Context, k int, out *vec.Vector, row int) error {
	return cs.eachPage(ctx, k, k, func(int) bool { return out != nil }, func(got, m int) error {
		if out == nil {
			cs.skip(m)
			return nil
		}
		return cs.take(out, row+got, m)
	})
}

// eachPage walks the stream's next n rows (not counted in cs.pos) a page
// at a time: where the current page is used up it checks ctx and reads
// the next, decompressing it only where decode(got) says rows from got on
// are to be converted, and it calls f with the rows [got, got+k) that lie
// on the current page. f passes them, converting or skipping each. want
// is how many of the n rows the caller converts (n, or a selection's).
func (cs *ColumnStream) eachPage(ctx context.Context, n, want int, decode func(got int) bool, f func(got, k int) error) error {
	for got := 0; got < n; {
		if cs.curLeft() == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("storage: reading %s: %w", cs.rd.t.Name, err)
			}
			rows := 0
			if decode(got) {
				rows = n - got
				// A reader that goes on wants the page's rows past
				// these too, if it wants a row of a page or more on
				// average.
				if cs.readOn && want*cs.decoded >= n*cs.pagesRead {
					rows = cs.rows - cs.decoded
				}
			}
			if err := cs.page(rows); err != nil {
				return err
			}
		}
		k := min(n-got, cs.curLeft())
		if err := f(got, k); err != nil {
			return err
		}
		got += k
	}
	return nil
}

// eachSelPage is eachPage for the selected rows sel (increasing indexes
// below n): f gets, with each page's rows [got, got+k), the selected ones
// among them, rs, which start at sel[i]. A page none of whose rows is
// selected is not decompressed.
func (cs *ColumnStream) eachSelPage(ctx context.Context, n int, sel []int32, f func(i int, rs []int32, got, k int) error) error {
	i := 0 // the next of sel
	return cs.eachPage(ctx, n, len(sel), func(int) bool { return i < len(sel) }, func(got, k int) error {
		j := i
		for j < len(sel) && int(sel[j]) < got+k {
			j++
		}
		if err := f(i, sel[i:j], got, k); err != nil {
			return err
		}
		i = j
		return nil
	})
}

func (cs *ColumnStream) read(ctx context.Context, n int, keep bool) (*vec.Vector, error) {
	n = max(0, min(n, cs.rows-cs.pos))
	if cs.whole != nil {
		v := cs.whole.Slice(cs.pos, cs.pos+n)
		cs.pos += n
		return v, nil
	}
	if cs.pages == nil && n > 0 {
		if err := cs.open(); err != nil {
			return nil, err
		}
	}
	var out *vec.Vector
	if keep {
		// One vector for the n rows, whichever pages they are on: each
		// page's rows are converted into it in place.
		out = cs.vector(n)
	}
	err := cs.eachPage(ctx, n, n, func(int) bool { return keep }, func(got, k int) error {
		if !keep {
			cs.skip(k)
			return nil
		}
		return cs.take(out, got, k)
	})
	if err != nil {
		return nil, err
	}
	cs.pos += n
	return out, nil
}

// vector returns an empty vector for n rows of the column: the one given
// back by Recycle, emptied, or a new one sized for them.
func (cs *ColumnStream) vector(n int) *vec.Vector {
	if v := cs.spare; v != nil {
		cs.spare = nil
		old := *v
		*v = vec.Vector{Type: old.Type, I64: old.I64[:0], F64: old.F64[:0], Bytes: old.Bytes[:0]}
		if v.Type == vec.String {
			v.Offsets = append(old.Offsets[:0], 0)
		}
		return v
	}
	v := vec.NewVector(cs.rd.t.Columns[cs.j].Type, n)
	if v.Type == vec.String {
		v.Bytes = make([]byte, 0, min(n*cs.perByte, 64<<20))
	}
	return v
}

// Close releases the stream's pages.
func (cs *ColumnStream) Close() error {
	if cs.pages == nil {
		return nil
	}
	cs.release()
	err := cs.pages.Close()
	cs.pages = nil
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}
