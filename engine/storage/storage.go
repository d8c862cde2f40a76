// Package storage serves tables stored as Parquet files in a data directory
// (or registered in memory) as engine vectors.
//
// A table name t means a table registered in memory under that name, or the
// file DIR/t.parquet; a quoted file name in a FROM
// clause ('x.parquet') is resolved inside DIR only: absolute paths, ".."
// and symbolic links leading out of DIR are refused (os.Root enforces it).
//
// Load decodes the requested columns through parquet-go's page API, one
// vec.Batch per row group, and keeps decoded columns in an LRU cache bounded
// in bytes, keyed by file, modification time, size and column, so repeated
// queries over the same columns skip decoding. Concurrent loads of one column
// decode it once. A corrupt or truncated file yields an error naming the file,
// never a panic.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
)

// Catalog resolves table names to Parquet files and caches decoded columns.
// It is safe for concurrent use.
type Catalog struct {
	dir  string
	root *os.Root // nil when dir == ""

	mu    sync.Mutex
	mem   map[string]*memFile // registered in-memory files by table name
	gen   int64               // registration counter (cache identity of memory files)
	cache *cache

	decodes atomic.Int64 // columns decoded from files (for tests)
}

type memFile struct {
	r    io.ReaderAt
	size int64
	gen  int64
}

// TableInfo describes one table for SHOW TABLES.
type TableInfo struct {
	Name    string
	Path    string // file path ("" for in-memory tables)
	Rows    int64
	Columns []vec.Column
	Err     string // why the file could not be read ("" when fine)
}

// Table is a resolved table: a Parquet file with a supported schema.
type Table struct {
	Name         string
	Path         string       // file path inside the data directory, or "memory:NAME"
	Columns      []vec.Column // in file order
	Rows         int64
	RowGroupRows []int64 // rows of each row group

	convs    []conv
	leaves   []int // leaf column index in the file of each column
	optional []bool
	mem      *memFile
	relPath  string // path relative to the data directory
	modTime  time.Time
	size     int64
}

// Open returns a catalog over the Parquet files in dir, caching up to
// cacheBytes of decoded columns (0 disables the cache). dir may be "", in
// which case only Register'ed in-memory files are tables.
func Open(dir string, cacheBytes int64) (*Catalog, error) {
	c := &Catalog{dir: dir, mem: map[string]*memFile{}, cache: newCache(cacheBytes)}
	if dir != "" {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("storage: opening data directory: %w", err)
		}
		c.root = root
	}
	return c, nil
}

// Close releases the data directory handle.
func (c *Catalog) Close() error {
	if c.root != nil {
		return c.root.Close()
	}
	return nil
}

// Register makes the Parquet file in r (size bytes) available as table
// name, replacing an earlier registration of that name. The file is opened
// once to validate it.
func (c *Catalog) Register(name string, r io.ReaderAt, size int64) error {
	if !validName(name) {
		return fmt.Errorf("storage: invalid table name %q", name)
	}
	if _, err := openParquet(r, size, "memory:"+name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.mem[name] = &memFile{r: r, size: size, gen: c.gen}
	return nil
}

// validName reports whether name can be a table name (it becomes a file
// stem, so no separators or dots).
func validName(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case r > 127:
		default:
			return false
		}
	}
	return true
}

// Tables lists the registered tables and the *.parquet files of the data
// directory, sorted by name. A file that cannot be read is listed with Err.
func (c *Catalog) Tables() ([]TableInfo, error) {
	var out []TableInfo
	c.mu.Lock()
	names := make([]string, 0, len(c.mem))
	for n := range c.mem {
		names = append(names, n)
	}
	c.mu.Unlock()
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
		ti := info(c.Table(n, false))
		ti.Name = n
		out = append(out, ti)
	}
	if c.root != nil {
		d, err := c.root.Open(".")
		if err != nil {
			return nil, fmt.Errorf("storage: listing %s: %w", c.dir, err)
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return nil, fmt.Errorf("storage: listing %s: %w", c.dir, err)
		}
		for _, e := range ents {
			stem, ok := strings.CutSuffix(e.Name(), ".parquet")
			if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") || seen[stem] || !validName(stem) {
				continue
			}
			t, err := c.Table(e.Name(), true)
			ti := info(t, err)
			ti.Name = stem
			if ti.Path == "" {
				ti.Path = filepath.Join(c.dir, e.Name())
			}
			out = append(out, ti)
		}
	}
	slices.SortFunc(out, func(a, b TableInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func info(t *Table, err error) TableInfo {
	if err != nil {
		return TableInfo{Rows: -1, Err: err.Error()}
	}
	return TableInfo{Name: t.Name, Path: t.Path, Rows: t.Rows, Columns: t.Columns}
}

// Table resolves a table reference. With isFile false, ref is a table name:
// a registered in-memory table or DIR/ref.parquet. With isFile true, ref is
// a file name relative to the data directory ('hits.parquet',
// 'sub/x.parquet'), or the name of a registered file.
func (c *Catalog) Table(ref string, isFile bool) (t *Table, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("storage: %q: corrupt Parquet file: %v", ref, p)
		}
	}()
	c.mu.Lock()
	m := c.mem[ref]
	if m == nil && isFile {
		if stem, ok := strings.CutSuffix(ref, ".parquet"); ok {
			m = c.mem[stem]
		}
	}
	c.mu.Unlock()
	if m != nil {
		name := ref
		if isFile {
			name = strings.TrimSuffix(ref, ".parquet")
		}
		f, err := openParquet(m.r, m.size, "memory:"+name)
		if err != nil {
			return nil, err
		}
		t, err := newTable(name, "memory:"+name, f)
		if err != nil {
			return nil, err
		}
		t.mem = m
		return t, nil
	}

	var rel, name string
	if isFile {
		if ref == "" || filepath.IsAbs(ref) || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, `\`) {
			return nil, fmt.Errorf("storage: file %q: only paths relative to the data directory are allowed", ref)
		}
		rel = filepath.Clean(filepath.FromSlash(ref))
		if !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("storage: file %q: path leaves the data directory", ref)
		}
		name = strings.TrimSuffix(filepath.Base(rel), ".parquet")
	} else {
		if !validName(ref) {
			return nil, fmt.Errorf("storage: table %q: invalid table name", ref)
		}
		rel, name = ref+".parquet", ref
	}
	what := "table " + quote(ref)
	if isFile {
		what = "file " + quote(ref)
	}
	if c.root == nil {
		return nil, fmt.Errorf("storage: %s: not found (no data directory)", what)
	}
	fh, err := c.root.Open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("storage: %s does not exist in %s", what, c.dir)
		}
		return nil, fmt.Errorf("storage: %s: %w", what, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("storage: %s is not a regular file", what)
	}
	path := filepath.Join(c.dir, rel)
	f, err := openParquet(fh, st.Size(), path)
	if err != nil {
		return nil, err
	}
	t, err = newTable(name, path, f)
	if err != nil {
		return nil, err
	}
	t.relPath, t.modTime, t.size = rel, st.ModTime(), st.Size()
	return t, nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// openParquet opens a Parquet file, converting parquet-go panics on corrupt
// input into errors that name the file.
func openParquet(r io.ReaderAt, size int64, path string) (f *parquet.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("storage: %s: corrupt Parquet file: %v", path, p)
		}
	}()
	if err := checkFooter(r, size); err != nil {
		return nil, fmt.Errorf("storage: %s: %w", path, err)
	}
	f, err = parquet.OpenFile(r, size,
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(1<<20),
	)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", path, err)
	}
	return f, nil
}

func newTable(name, path string, f *parquet.File) (*Table, error) {
	t := &Table{Name: name, Path: path, Rows: f.NumRows()}
	schema := f.Schema()
	for _, field := range schema.Fields() {
		fname := field.Name()
		if !field.Leaf() {
			return nil, fmt.Errorf("storage: %s: column %q: nested columns are not supported", path, fname)
		}
		if field.Repeated() {
			return nil, fmt.Errorf("storage: %s: column %q: repeated columns are not supported", path, fname)
		}
		leaf, ok := schema.Lookup(fname)
		if !ok {
			return nil, fmt.Errorf("storage: %s: column %q not found in schema", path, fname)
		}
		typ, cv, err := mapType(fname, field)
		col := vec.Column{Name: fname, Type: typ}
		if err != nil {
			// Only queries that use the column fail.
			col = vec.Column{Name: fname, Type: vec.Null, Err: fmt.Errorf("storage: %s: %w", path, err)}
			cv = convNone
		}
		t.Columns = append(t.Columns, col)
		t.convs = append(t.convs, cv)
		t.leaves = append(t.leaves, leaf.ColumnIndex)
		t.optional = append(t.optional, leaf.MaxDefinitionLevel > 0)
	}
	var sum int64
	for _, rg := range f.RowGroups() {
		n := rg.NumRows()
		if n < 0 || len(rg.ColumnChunks()) != len(schema.Columns()) {
			return nil, fmt.Errorf("storage: %s: corrupt row group metadata", path)
		}
		t.RowGroupRows = append(t.RowGroupRows, n)
		sum += n
	}
	if sum != t.Rows {
		return nil, fmt.Errorf("storage: %s: row groups hold %d rows, footer says %d", path, sum, t.Rows)
	}
	return t, nil
}

// Load returns the columns cols of t (all columns when cols is empty), one
// batch per row group, vectors in the order of cols. Decoded columns come
// from the cache when present. progress, if not nil, is called with the
// rows decoded so far and the table's row count.
func (c *Catalog) Load(ctx context.Context, t *Table, cols []string, progress func(done, total int64)) ([]*vec.Batch, error) {
	if len(cols) == 0 {
		for _, col := range t.Columns {
			cols = append(cols, col.Name)
		}
	}
	idx := make([]int, len(cols))
	for i, name := range cols {
		idx[i] = -1
		for j, col := range t.Columns {
			if col.Name == name {
				idx[i] = j
				break
			}
		}
		if idx[i] < 0 {
			for j, col := range t.Columns {
				if strings.EqualFold(col.Name, name) {
					idx[i] = j
					break
				}
			}
		}
		if idx[i] < 0 {
			return nil, fmt.Errorf("storage: %s: no column %q", t.Path, name)
		}
	}

	var cached map[int][]*vec.Vector
	var err error
	for attempt := 0; ; attempt++ {
		cached, err = c.loadColumns(ctx, t, idx, progress)
		// A column another query was decoding failed because that query
		// was cancelled: decode it ourselves.
		if err == nil || ctx.Err() != nil || attempt == 2 || !errors.Is(err, errOtherCancelled) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	out := make([]*vec.Batch, len(t.RowGroupRows))
	for g := range out {
		b := &vec.Batch{Len: int(t.RowGroupRows[g]), Vecs: make([]*vec.Vector, len(idx))}
		for i, j := range idx {
			b.Vecs[i] = cached[j][g]
		}
		out[g] = b
	}
	return out, nil
}

var errOtherCancelled = errors.New("storage: load cancelled by another query")

// loadColumns returns the columns idx of t by row group, from the cache or
// decoded now.
func (c *Catalog) loadColumns(ctx context.Context, t *Table, idx []int, progress func(done, total int64)) (map[int][]*vec.Vector, error) {
	type want struct {
		col int
		e   *entry
		own bool
	}
	var wants []*want
	seen := map[int]bool{}
	var mine []*want
	ident := t.ident()
	for _, j := range idx {
		if seen[j] {
			continue
		}
		seen[j] = true
		e, own := c.cache.acquire(cacheKey{ident: ident, col: t.Columns[j].Name})
		w := &want{col: j, e: e, own: own}
		wants = append(wants, w)
		if own {
			mine = append(mine, w)
		}
	}
	if len(mine) > 0 {
		cs := make([]int, len(mine))
		for i, w := range mine {
			cs[i] = w.col
		}
		c.decodes.Add(int64(len(cs)))
		res, err := c.decode(ctx, t, cs, progress)
		for i, w := range mine {
			if err != nil {
				ferr := err
				if ctx.Err() != nil {
					ferr = fmt.Errorf("%w: %w", errOtherCancelled, err)
				}
				c.cache.fail(w.e, ferr)
			} else {
				c.cache.complete(w.e, res[i])
			}
		}
		if err != nil {
			return nil, err
		}
	} else if progress != nil {
		progress(t.Rows, t.Rows)
	}
	out := make(map[int][]*vec.Vector, len(wants))
	for _, w := range wants {
		vs, err := c.cache.wait(ctx, w.e)
		if err != nil {
			return nil, err
		}
		out[w.col] = vs
	}
	return out, nil
}

// ident is the cache identity of the table's file.
func (t *Table) ident() string {
	if t.mem != nil {
		return fmt.Sprintf("%s\x00gen%d", t.Path, t.mem.gen)
	}
	return fmt.Sprintf("%s\x00%d\x00%d", t.Path, t.modTime.UnixNano(), t.size)
}

// decode reads columns cs of t from its file, row group by row group.
func (c *Catalog) decode(ctx context.Context, t *Table, cs []int, progress func(done, total int64)) (res [][]*vec.Vector, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("storage: %s: corrupt Parquet file: %v", t.Path, p)
		}
	}()
	var r io.ReaderAt
	size := t.size
	if t.mem != nil {
		r, size = t.mem.r, t.mem.size
	} else {
		if c.root == nil {
			return nil, fmt.Errorf("storage: %s: no data directory", t.Path)
		}
		fh, err := c.root.Open(t.relPath)
		if err != nil {
			return nil, fmt.Errorf("storage: %s: %w", t.Path, err)
		}
		defer fh.Close()
		st, err := fh.Stat()
		if err != nil {
			return nil, fmt.Errorf("storage: %s: %w", t.Path, err)
		}
		if st.Size() != t.size || !st.ModTime().Equal(t.modTime) {
			return nil, fmt.Errorf("storage: %s changed since the query was planned; run it again", t.Path)
		}
		r = fh
	}
	f, err := openParquet(r, size, t.Path)
	if err != nil {
		return nil, err
	}
	rgs := f.RowGroups()
	if len(rgs) != len(t.RowGroupRows) {
		return nil, fmt.Errorf("storage: %s changed since the query was planned; run it again", t.Path)
	}
	res = make([][]*vec.Vector, len(cs))
	cols := make([]*columnBuilder, len(cs))
	for i, j := range cs {
		if err := t.Columns[j].Err; err != nil {
			return nil, err
		}
		cols[i] = newColumnBuilder(t.Columns[j].Type, t.convs[j], t.optional[j], t.Rows, size)
		res[i] = make([]*vec.Vector, len(rgs))
	}
	var done int64
	for g, rg := range rgs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("storage: loading %s: %w", t.Name, err)
		}
		want := t.RowGroupRows[g]
		chunks := rg.ColumnChunks()
		meta := f.Metadata().RowGroups[g].Columns
		for i, j := range cs {
			leaf := t.leaves[j]
			if leaf >= len(meta) || leaf >= len(chunks) {
				return nil, fmt.Errorf("storage: %s: corrupt row group %d metadata", t.Path, g)
			}
			md := meta[leaf].MetaData
			start := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
				start = md.DictionaryPageOffset
			}
			if err := checkChunkHeaders(r, start, start+md.TotalCompressedSize); err != nil {
				return nil, fmt.Errorf("storage: %s: column %q, row group %d: %w", t.Path, t.Columns[j].Name, g, err)
			}
			// The uncompressed chunk size bounds the string bytes; trust it
			// only as far as a plausible compression ratio goes.
			hint := min(md.TotalUncompressedSize, 32*md.TotalCompressedSize+1<<20)
			v, err := cols[i].rowGroup(chunks[leaf], want, hint)
			if err != nil {
				return nil, fmt.Errorf("storage: %s: column %q, row group %d: %w", t.Path, t.Columns[j].Name, g, err)
			}
			res[i][g] = v
		}
		done += want
		if progress != nil {
			progress(done, t.Rows)
		}
	}
	return res, nil
}
