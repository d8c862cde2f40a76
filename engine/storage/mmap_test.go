package storage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fileCatalog writes data as name.parquet into a directory of its own and
// returns a catalog of it: its pages are read from a mapping where the
// system maps files.
func fileCatalog(t testing.TB, name string, data []byte, budget int64) *Catalog {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name+".parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir, budget)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMappedPages reads the same file from memory (pread) and from disk
// (a mapping): whole chunks, streams in uneven steps, and chosen rows;
// the mappings are released when the streams are closed and never
// exceed the budget.
func TestMappedPages(t *testing.T) {
	data := writeAllTypes(t, 3000)
	c := fileCatalog(t, "t", data, 0)
	tb, err := c.Table("t", false)
	if err != nil {
		t.Fatal(err)
	}
	checkStreams(t, c, tb)
	if n := c.mapped.Load(); n != 0 {
		t.Errorf("%d bytes still mapped after the streams were closed", n)
	}
	ctx := context.Background()
	got, err := c.Load(ctx, tb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := memCatalog(t, "t", data, 0)
	mt, err := m.Table("t", false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Load(ctx, mt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for g := range want {
		for j := range want[g].Vecs {
			w, v := want[g].Vecs[j], got[g].Vecs[j]
			for i := range w.Len {
				if v.Format(i) != w.Format(i) {
					t.Fatalf("%s row group %d row %d: %s from the file, %s from memory", tb.Columns[j].Name, g, i, v.Format(i), w.Format(i))
				}
			}
		}
	}

	// Every column of a row group streamed at once: the mappings stay
	// within the budget, and the chunks are mapped while read.
	rd, err := c.Open(tb)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var streams []*ColumnStream
	for j := range tb.Columns {
		st, err := rd.Stream(ctx, 0, j)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Next(ctx, 5); err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
		if n := c.mapped.Load(); n > mapBudget {
			t.Fatalf("%d bytes mapped, over the budget of %d", n, mapBudget)
		}
	}
	if canMap && c.mapped.Load() == 0 {
		t.Error("no chunk is mapped while streamed")
	}
	for _, st := range streams {
		st.Close()
	}
	if n := c.mapped.Load(); n != 0 {
		t.Errorf("%d bytes still mapped after the streams were closed", n)
	}
}

// TestMappedCorruptFiles loads damaged files from disk, read through a
// mapping, and from memory, read with pread: both fail, or neither, and
// with the same kind of error.
func TestMappedCorruptFiles(t *testing.T) {
	data := writeAllTypes(t, 1200)
	for i := range 60 {
		d := bytes.Clone(data)
		pos := (i*104729 + 13) % len(d)
		d[pos] ^= 1 << (i % 8)
		memErr := loadAll(d)
		c := fileCatalog(t, "f", d, 1<<20)
		var fileErr error
		tb, err := c.Table("f", false)
		if err != nil {
			fileErr = err
		} else {
			_, fileErr = c.Load(context.Background(), tb, nil, nil)
		}
		if (memErr == nil) != (fileErr == nil) {
			t.Errorf("flip at %d: from memory %v, from the file %v", pos, memErr, fileErr)
			continue
		}
		if memErr == nil {
			continue
		}
		if !strings.Contains(fileErr.Error(), "f.parquet") {
			t.Errorf("flip at %d: error does not name the file: %v", pos, fileErr)
		}
		if strings.Contains(memErr.Error(), "corrupt") != strings.Contains(fileErr.Error(), "corrupt") {
			t.Errorf("flip at %d: from memory %v, from the file %v", pos, memErr, fileErr)
		}
		if n := c.mapped.Load(); n != 0 {
			t.Errorf("flip at %d: %d bytes still mapped", pos, n)
		}
	}
}

// TestMappedReaderDropped drops a reader of pages, mapped, without
// closing it: its mapping is released when it is collected.
func TestMappedReaderDropped(t *testing.T) {
	if !canMap {
		t.Skip("no mappings here")
	}
	c := fileCatalog(t, "t", writeAllTypes(t, 3000), 0)
	tb, err := c.Table("t", false)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := c.Open(tb)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	func() {
		pages, _, err := rd.chunkPages(0, tb.ColumnIndex("Str"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pages.ReadPage(); err != nil {
			t.Fatal(err)
		}
	}()
	if c.mapped.Load() == 0 {
		t.Fatal("the chunk is not mapped")
	}
	for i := 0; i < 100 && c.mapped.Load() != 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.mapped.Load(); n != 0 {
		t.Errorf("%d bytes still mapped after the reader was collected", n)
	}
}
