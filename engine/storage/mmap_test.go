package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
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

// fileReader is fileCatalog of data as table t, with that table and a
// reader of it, closed when the test ends.
func fileReader(t testing.TB, data []byte) (*Catalog, *Table, *Reader) {
	t.Helper()
	c := fileCatalog(t, "t", data, 0)
	tb, rd := tableReader(t, c, "t")
	return c, tb, rd
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
	c, tb, rd := fileReader(t, writeAllTypes(t, 3000))
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

// TestReadOn streams a SNAPPY string column of pages larger than
// lazyPrefix from a mapped file in steps that open pages near their ends.
// A stream told ReadOn decompresses every page it opens whole, straight
// from the mapping; one not told (a LIMIT's), and one whose selection
// wants fewer than a row per page, leave some a prefix at a time. The
// values are the same either way.
func TestReadOn(t *testing.T) {
	type row struct {
		S string `parquet:"S,plain"`
	}
	const n = 40000
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(n), parquet.PageBufferSize(64<<10))
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("https://example.com/%d/%x", i%977, i*7919)
		if _, err := w.Write([]row{{S: want[i]}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, rd := fileReader(t, buf.Bytes())
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		readOn    bool
		step      int
		every     int // select every every-th row of a step (0: Next, every row)
		wantWhole bool
	}{
		{"read on", true, 1000, 0, true},
		{"a LIMIT's", false, 1000, 0, false},
		{"read on, a selection", true, 1000, 3, true},
		{"read on, a sparse selection", true, 8000, 8000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := rd.Stream(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if tc.readOn {
				st.ReadOn()
			}
			allWhole := true
			for at := 0; at < n; at += tc.step {
				var v *vec.Vector
				var rows []int
				if tc.every == 0 {
					v, err = st.Next(ctx, tc.step)
					for i := range tc.step {
						rows = append(rows, at+i)
					}
				} else {
					var sel []int32
					for i := 0; i < tc.step; i += tc.every {
						sel = append(sel, int32(i))
						rows = append(rows, at+i)
					}
					v, err = st.NextSel(ctx, tc.step, sel)
				}
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range rows {
					if got := string(v.Str(i)); got != want[r] {
						t.Fatalf("row %d: %q, want %q", r, got, want[r])
					}
				}
				if p := st.pv.plain; st.cur != nil && p != nil && p.have < p.size {
					allWhole = false
				}
			}
			if allWhole != tc.wantWhole {
				t.Errorf("every page decompressed whole as it was opened: %v, want %v", allWhole, tc.wantWhole)
			}
		})
	}
}
