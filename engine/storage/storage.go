// Package storage serves tables stored as Parquet files in a data directory
// (or registered in memory) as engine vectors.
//
// A table name t means a table registered in memory under that name, or the
// file DIR/t.parquet; a quoted file name in a FROM
// clause ('x.parquet') is resolved inside DIR only: absolute paths, ".."
// and symbolic links leading out of DIR are refused (os.Root enforces it).
//
// A Reader decodes the requested columns of one row group at a time through
// parquet-go's page API, so a scan holds only the row groups in flight.
// Decoded column chunks are kept in an LRU cache bounded in bytes, keyed by
// file, modification time, size, column and row group, so repeated queries
// over the same columns skip decoding; the cache is an optimisation only, a
// table larger than it is read all the same. Concurrent reads of one chunk
// decode it once. A corrupt or truncated file yields an error naming the file,
// never a panic.
//
// On Linux and macOS a file's pages are read from a read-only memory
// mapping, a window of 1 MiB of a column chunk at a time and 16 MiB of
// windows per catalog at most (mapped pages count in the resident memory);
// elsewhere, and past that bound, with pread. A file truncated while it is
// mapped is an error too ("the file changed while it was read").
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

	decodes atomic.Int64 // column chunks decoded from files
	mapped  atomic.Int64 // bytes of files its readers map (see chunkMap)
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
	leaves   []int   // leaf column index in the file of each column
	decoded  []int64 // estimated bytes of each column decoded, over all row groups
	optional []bool
	mem      *memFile
	// file is the footer as read when the table was resolved. Its own
	// handle is closed: a Reader reads pages through one it opens.
	file *parquet.File
	// bare returns the file's leaf columns without a codec, which decode
	// the pages that a pageReader decompressed (see bareColumns); made
	// once, on the first read of a page.
	bare    func() ([]*parquet.Column, error)
	relPath string // path relative to the data directory
	modTime time.Time
	size    int64
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
			if tp := e.Type(); tp&fs.ModeSymlink == 0 && !tp.IsRegular() {
				// A FIFO, socket or device: listed as unreadable without
				// opening it (opening a FIFO blocks).
				out = append(out, TableInfo{Name: stem, Path: filepath.Join(c.dir, e.Name()), Rows: -1, Err: "not a regular file"})
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
			t, err = nil, fmt.Errorf("%q: corrupt Parquet file: %v", ref, p)
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
			return nil, fmt.Errorf("file %q: only paths relative to the data directory are allowed", ref)
		}
		rel = filepath.Clean(filepath.FromSlash(ref))
		if !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("file %q: path leaves the data directory", ref)
		}
		name = strings.TrimSuffix(filepath.Base(rel), ".parquet")
	} else {
		if !validName(ref) {
			return nil, fmt.Errorf("table %q: invalid table name", ref)
		}
		rel, name = ref+".parquet", ref
	}
	what := "table " + quote(ref)
	if isFile {
		what = "file " + quote(ref)
	}
	if c.root == nil {
		return nil, &NotFoundError{What: what, Name: ref}
	}
	// Stat before opening: opening a FIFO or a device for reading can
	// block until someone writes to it.
	if st, err := c.root.Stat(rel); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", what)
	}
	fh, err := c.root.Open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &NotFoundError{What: what, Name: ref}
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", what)
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

// NotFoundError reports a table or file that is not in the catalog or the
// data directory.
type NotFoundError struct {
	What string // `table "hit"` or `file "x.parquet"`
	Name string // the name as written
}

func (e *NotFoundError) Error() string { return e.What + " does not exist" }

// Names lists the names a query can use as tables: the registered tables
// and the *.parquet files of the data directory, without opening them.
func (c *Catalog) Names() []string {
	c.mu.Lock()
	names := make([]string, 0, len(c.mem))
	for n := range c.mem {
		names = append(names, n)
	}
	c.mu.Unlock()
	if c.root == nil {
		return names
	}
	d, err := c.root.Open(".")
	if err != nil {
		return names
	}
	defer d.Close()
	ents, _ := d.ReadDir(-1)
	for _, e := range ents {
		if stem, ok := strings.CutSuffix(e.Name(), ".parquet"); ok && !e.IsDir() && validName(stem) && !slices.Contains(names, stem) {
			names = append(names, stem)
		}
	}
	return names
}

// readBuffer is the read buffer of each column chunk being read. A stream
// reads every column of a row group at once, each keeping its buffer, so
// it is a few pages, not a chunk.
const readBuffer = 64 << 10

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
		parquet.ReadBufferSize(readBuffer),
	)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", path, err)
	}
	return f, nil
}

func newTable(name, path string, f *parquet.File) (*Table, error) {
	t := &Table{Name: name, Path: path, Rows: f.NumRows(), file: f,
		bare: sync.OnceValues(func() ([]*parquet.Column, error) { return bareColumns(f) })}
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
	// A word per value, and for strings their bytes: the chunks'
	// uncompressed size, which holds each value with a 4-byte length.
	for j, col := range t.Columns {
		n := t.Rows * 8
		if col.Type == vec.String {
			for _, rg := range f.Metadata().RowGroups {
				if t.leaves[j] < len(rg.Columns) {
					n += rg.Columns[t.leaves[j]].MetaData.TotalUncompressedSize
				}
			}
		}
		t.decoded = append(t.decoded, n)
	}
	return t, nil
}

// Load returns the columns cols of t (all columns when cols is empty), one
// batch per row group, vectors in the order of cols. It decodes the whole
// table and is meant for tests and tools; queries read row groups one at a
// time through a Reader. Decoded chunks come from the cache when present.
// progress, if not nil, is called with the rows loaded so far and the
// table's row count.
func (c *Catalog) Load(ctx context.Context, t *Table, cols []string, progress func(done, total int64)) ([]*vec.Batch, error) {
	if len(cols) == 0 {
		for _, col := range t.Columns {
			cols = append(cols, col.Name)
		}
	}
	idx := make([]int, len(cols))
	for i, name := range cols {
		idx[i] = t.ColumnIndex(name)
		if idx[i] < 0 {
			return nil, fmt.Errorf("storage: %s: no column %q", t.Path, name)
		}
	}
	rd, err := c.Open(t)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	rd.VerifyChecksums(true)
	out := make([]*vec.Batch, len(t.RowGroupRows))
	var done int64
	for g := range out {
		vs, err := rd.RowGroup(ctx, g, idx)
		if err != nil {
			return nil, err
		}
		out[g] = &vec.Batch{Len: int(t.RowGroupRows[g]), Vecs: vs}
		done += t.RowGroupRows[g]
		if progress != nil {
			progress(done, t.Rows)
		}
	}
	return out, nil
}

// ColumnIndex returns the index of the column named name (an exact match
// first, then case-insensitively), or -1.
func (t *Table) ColumnIndex(name string) int {
	for j, col := range t.Columns {
		if col.Name == name {
			return j
		}
	}
	for j, col := range t.Columns {
		if strings.EqualFold(col.Name, name) {
			return j
		}
	}
	return -1
}

var errOtherCancelled = errors.New("storage: load cancelled by another query")

// ident is the cache identity of the table's file.
func (t *Table) ident() string {
	if t.mem != nil {
		return fmt.Sprintf("%s\x00gen%d", t.Path, t.mem.gen)
	}
	return fmt.Sprintf("%s\x00%d\x00%d", t.Path, t.modTime.UnixNano(), t.size)
}
