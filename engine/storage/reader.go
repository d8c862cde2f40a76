package storage

import (
	"context"
	"errors"
	"fmt"
	"io"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Reader reads one table row group at a time: a scan asks for the columns
// it needs of the row group it is at, and drops them when it moves on, so a
// query's memory is bounded by the row groups in flight, not the table.
// Decoded column chunks go through the catalog's cache. A Reader is safe for
// concurrent use by several workers; Close it when the scan is done.
type Reader struct {
	c     *Catalog
	t     *Table
	f     *parquet.File // t.file: the footer, read once when t was resolved
	r     io.ReaderAt   // the file's pages are read through this handle
	size  int64
	close func() error
	// verify: check each page's CRC32, where the file wrote one, before
	// decoding it (see VerifyChecksums).
	verify bool
}

// VerifyChecksums sets whether the reader checks each page's CRC32, where
// the file wrote one, before decoding the page; a mismatch fails the read
// with an error naming the page. Off by default, as in DuckDB (which does
// not check them) and Arrow: on an integer column the check costs about as
// much as decompressing the page, and a corrupt page that decompresses is
// still bounded by the decoders' checks. Catalog.Load checks them.
func (rd *Reader) VerifyChecksums(on bool) { rd.verify = on }

// chunkPages returns a reader of the pages of column j (an index into
// Table.Columns) in row group g, read through rd's handle, and the chunk's
// metadata; the page headers are checked as the pages are reached.
func (rd *Reader) chunkPages(g, j int) (pages parquet.Pages, md *format.ColumnMetaData, err error) {
	t := rd.t
	defer func() {
		if p := recover(); p != nil {
			pages, md, err = nil, nil, fmt.Errorf("storage: %s: corrupt Parquet file: %v", t.Path, p)
		}
	}()
	if err := t.Columns[j].Err; err != nil {
		return nil, nil, err // a column of a type the engine cannot read
	}
	chunks := rd.f.RowGroups()[g].ColumnChunks()
	meta := rd.f.Metadata().RowGroups[g].Columns
	leaf := t.leaves[j]
	if leaf >= len(meta) || leaf >= len(chunks) {
		return nil, nil, fmt.Errorf("storage: %s: corrupt row group %d metadata", t.Path, g)
	}
	md = &meta[leaf].MetaData
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	walk, err := newHeaderWalk(rd.r, start, start+md.TotalCompressedSize)
	if err != nil {
		return nil, nil, fmt.Errorf("storage: %s: column %q, row group %d: %w", t.Path, t.Columns[j].Name, g, err)
	}
	bare, err := t.bare()
	if err != nil {
		return nil, nil, fmt.Errorf("storage: %s: %w", t.Path, err)
	}
	if leaf >= len(bare) {
		return nil, nil, fmt.Errorf("storage: %s: corrupt schema", t.Path)
	}
	pr := &pageReader{r: rd.r, col: bare[leaf], codec: md.Codec, phys: md.Type, walk: walk, verify: rd.verify}
	pr.plainOK = plainConv(t.convs[j], md.Type) && pr.col.MaxDefinitionLevel() == 0 && pr.col.MaxRepetitionLevel() == 0
	if m := newChunkMap(rd.r, rd.size, start, start+md.TotalCompressedSize, &rd.c.mapped); m != nil {
		pr.mapPages(m)
	}
	return pr, md, nil
}

// Open opens t's file for reading row groups. It fails if the file changed
// since t was resolved.
func (c *Catalog) Open(t *Table) (rd *Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			rd, err = nil, fmt.Errorf("storage: %s: corrupt Parquet file: %v", t.Path, p)
		}
	}()
	rd = &Reader{c: c, t: t, close: func() error { return nil }}
	if t.mem != nil {
		rd.r, rd.size = t.mem.r, t.mem.size
	} else {
		if c.root == nil {
			return nil, fmt.Errorf("storage: %s: no data directory", t.Path)
		}
		fh, err := c.root.Open(t.relPath)
		if err != nil {
			return nil, fmt.Errorf("storage: %s: %w", t.Path, err)
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			return nil, fmt.Errorf("storage: %s: %w", t.Path, err)
		}
		if !st.Mode().IsRegular() {
			fh.Close()
			return nil, fmt.Errorf("storage: %s is not a regular file", t.Path)
		}
		if st.Size() != t.size || !st.ModTime().Equal(t.modTime) {
			fh.Close()
			return nil, fmt.Errorf("storage: %s changed since the query was planned; run it again", t.Path)
		}
		rd.r, rd.size, rd.close = fh, t.size, fh.Close
	}
	if t.file == nil {
		rd.close()
		return nil, fmt.Errorf("storage: %s: table has no footer read", t.Path)
	}
	rd.f = t.file
	return rd, nil
}

// Close releases the file.
func (rd *Reader) Close() error { return rd.close() }

// Table returns the table the reader reads.
func (rd *Reader) Table() *Table { return rd.t }

// IntBounds returns the minimum and maximum of column col (an index into
// Table.Columns) in row group g, as engine values, when the file's
// statistics hold them (StatBounds). ok is false otherwise, or for a chunk
// of NULLs only, and then nothing may be concluded.
func (rd *Reader) IntBounds(g, col int) (lo, hi int64, ok bool) {
	b := rd.StatBounds(g, col)
	return b.Min, b.Max, b.OK && !b.AllNull
}

// RowGroup returns columns cols (indexes into Table.Columns) of row group
// g, in the order of cols, from the cache or decoded now. The vectors are
// shared with the cache and must not be modified.
func (rd *Reader) RowGroup(ctx context.Context, g int, cols []int) ([]*vec.Vector, error) {
	t := rd.t
	if g < 0 || g >= len(t.RowGroupRows) {
		return nil, fmt.Errorf("storage: %s: no row group %d", t.Path, g)
	}
	out := make([]*vec.Vector, len(cols))
	ident := t.ident()
	for i, j := range cols {
		if j < 0 || j >= len(t.Columns) {
			return nil, fmt.Errorf("storage: %s: no column %d", t.Path, j)
		}
		var v *vec.Vector
		var err error
		for attempt := 0; ; attempt++ {
			v, err = rd.chunk(ctx, ident, g, j)
			// A chunk another query was decoding failed because that
			// query was cancelled: decode it ourselves.
			if err == nil || ctx.Err() != nil || attempt == 2 || !errors.Is(err, errOtherCancelled) {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// PassOnce returns those of columns cols (indexes into Table.Columns) of
// row group g that are better read page by page (Stream) than decoded
// whole (RowGroup): the cache holds none of their chunks and would not keep
// them if they were decoded now, as on the first read of a column too large
// to keep from its first read on. Decoding such a chunk whole only to drop
// it takes a fresh buffer for the whole chunk (tens of megabytes for a
// column of URLs), paying a page fault for every 4 KiB of it; a stream
// converts a morsel at a time into buffers the allocator reuses. The
// chunks returned count as read once: their next read decodes them whole,
// and the cache keeps them.
func (rd *Reader) PassOnce(g int, cols []int) []int {
	t := rd.t
	if g < 0 || g >= len(t.RowGroupRows) {
		return nil
	}
	ks := make([]cacheKey, 0, len(cols))
	large := make([]bool, 0, len(cols))
	ident := t.ident()
	for _, j := range cols {
		if j < 0 || j >= len(t.Columns) {
			return nil
		}
		ks = append(ks, cacheKey{ident: ident, col: t.Columns[j].Name, rowGroup: g})
		large = append(large, rd.c.cache.largeColumn(t.decoded[j]))
	}
	once := rd.c.cache.passOnce(ks, large)
	for i, k := range once {
		once[i] = cols[k]
	}
	return once
}

// chunk returns column j of row group g through the cache.
func (rd *Reader) chunk(ctx context.Context, ident string, g, j int) (*vec.Vector, error) {
	e, own := rd.c.cache.acquire(cacheKey{ident: ident, col: rd.t.Columns[j].Name, rowGroup: g})
	if own {
		rd.c.decodes.Add(1)
		v, err := rd.decode(ctx, g, j)
		if err != nil {
			ferr := err
			if ctx.Err() != nil {
				ferr = fmt.Errorf("%w: %w", errOtherCancelled, err)
			}
			rd.c.cache.fail(e, ferr)
			return nil, err
		}
		rd.c.cache.complete(e, []*vec.Vector{v}, rd.c.cache.largeColumn(rd.t.decoded[j]))
		return v, nil
	}
	vs, err := rd.c.cache.wait(ctx, e)
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// decode reads column j of row group g from the file.
func (rd *Reader) decode(ctx context.Context, g, j int) (v *vec.Vector, err error) {
	t := rd.t
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("storage: %s: corrupt Parquet file: %v", t.Path, p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: loading %s: %w", t.Name, err)
	}
	pages, md, err := rd.chunkPages(g, j)
	if err != nil {
		return nil, err
	}
	want := t.RowGroupRows[g]
	readAhead(pages, int(want))
	b := newColumnBuilder(t.Columns[j].Type, t.convs[j], t.optional[j], want, rd.size)
	// The uncompressed chunk size bounds the string bytes; trust it only as
	// far as a plausible compression ratio goes.
	hint := min(md.TotalUncompressedSize, 32*md.TotalCompressedSize+1<<20)
	v, err = b.rowGroup(pages, want, hint)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: column %q, row group %d: %w", t.Path, t.Columns[j].Name, g, err)
	}
	return v, nil
}

// VectorBytes returns the bytes held by the vectors vs (their capacities),
// for memory accounting.
func VectorBytes(vs ...*vec.Vector) int64 { return vectorsSize(vs) }
