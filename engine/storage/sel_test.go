package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
)

// TestNextSelStrings reads every string column of strCols (PLAIN,
// dictionary, optional with NULLs, dictionary pages then PLAIN ones)
// with NextSel under selections of every shape, in steps that start and
// end inside pages with skips between them, and compares each vector
// with Next's over a second stream, gathered: a wrong string copied, a
// row lost or a NULL misplaced fails it.
func TestNextSelStrings(t *testing.T) {
	// Small pages, three row groups; then one row group of large pages,
	// SNAPPY pages past lazyPrefix decompressed a prefix at a time.
	for _, layout := range []struct{ groupRows, pageBytes int }{{1000, 1024}, {3000, 64 << 10}} {
		testNextSelStrings(t, layout.groupRows, layout.pageBytes)
	}
}

func testNextSelStrings(t *testing.T, groupRows, pageBytes int) {
	const n = 3000
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[strCols](&buf, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(int64(groupRows)), parquet.PageBufferSize(pageBytes), parquet.DictionaryMaxBytes(256))
	rows := make([]strCols, n)
	for i := range rows {
		rows[i] = strColsRow(i)
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkNextSel(t, buf.Bytes())
}

// TestNextSelFixed is TestNextSelStrings for columns of every other
// type: PLAIN pages picked by position (decompressed a prefix at a time,
// or whole), dictionary pages by their indexes, pages with NULLs and
// booleans converted a run at a time.
func TestNextSelFixed(t *testing.T) {
	for _, layout := range []struct{ groupRows, pageBytes int }{{1000, 1024}, {3000, 64 << 10}} {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[allTypes](&buf, parquet.Compression(&parquet.Snappy),
			parquet.MaxRowsPerRowGroup(int64(layout.groupRows)), parquet.PageBufferSize(layout.pageBytes))
		for i := range 3000 {
			if _, err := w.Write([]allTypes{sampleRow(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		checkNextSel(t, buf.Bytes())
		// A fresh stream's first selection only of rows that are NULL
		// (OptI32's rows 1, 5, 9, …).
		c := memCatalog(t, "nulls", buf.Bytes(), 0)
		tb, _ := c.Table("nulls", false)
		rd, err := c.Open(tb)
		if err != nil {
			t.Fatal(err)
		}
		j := slices.IndexFunc(tb.Columns, func(c vec.Column) bool { return c.Name == "OptI32" })
		st, err := rd.Stream(context.Background(), 0, j)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.NextSel(context.Background(), 40, stride32(1, 4, 10))
		if err != nil || got.Len != 10 || got.Valid == nil || slices.Contains(got.Valid[:10], true) {
			t.Fatalf("NULL rows of OptI32: %+v, %v; want 10 NULLs", got, err)
		}
		st.Close()
		rd.Close()
		buf.Reset()
		wb := parquet.NewGenericWriter[bigPages](&buf, parquet.Compression(&parquet.Snappy),
			parquet.MaxRowsPerRowGroup(int64(layout.groupRows)), parquet.PageBufferSize(layout.pageBytes))
		for i := range 3000 {
			if _, err := wb.Write([]bigPages{bigPagesRow(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := wb.Close(); err != nil {
			t.Fatal(err)
		}
		checkNextSel(t, buf.Bytes())
	}
}

// checkNextSel reads every column of the Parquet file data with NextSel
// (see TestNextSelStrings) and compares each vector with Next's over a
// second stream, gathered.
func checkNextSel(t *testing.T, data []byte) {
	t.Helper()
	c := memCatalog(t, "t", data, 0)
	tb, _ := c.Table("t", false)
	ctx := context.Background()
	rd, err := c.Open(tb)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()

	sels := []struct {
		name string
		sel  func(n int) []int32
	}{
		{"none", func(n int) []int32 { return nil }},
		{"all", func(n int) []int32 { return stride32(0, 1, n) }},
		{"every other", func(n int) []int32 { return stride32(1, 2, n/2) }},
		{"every 7th", func(n int) []int32 { return stride32(3, 7, (n-3+6)/7) }},
		{"first and last", func(n int) []int32 {
			if n == 1 {
				return []int32{0}
			}
			return []int32{0, int32(n - 1)}
		}},
		{"runs", func(n int) []int32 {
			var s []int32
			for i := 0; i < n; i++ {
				if i%40 < 9 {
					s = append(s, int32(i))
				}
			}
			return s
		}},
		{"last only", func(n int) []int32 { return []int32{int32(n - 1)} }},
	}
	for _, sc := range sels {
		for g := range tb.RowGroupRows {
			for j, col := range tb.Columns {
				st, err := rd.Stream(ctx, g, j)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := rd.Stream(ctx, g, j)
				if err != nil {
					t.Fatal(err)
				}
				pos := 0
				for i, step := 0, 1; pos < int(tb.RowGroupRows[g]); i, step = i+1, step*2+3 {
					if i%4 == 3 {
						if err := st.Skip(ctx, step); err != nil {
							t.Fatal(err)
						}
						if err := ref.Skip(ctx, step); err != nil {
							t.Fatal(err)
						}
						pos += step
						continue
					}
					k := min(step, int(tb.RowGroupRows[g])-pos)
					sel := sc.sel(k)
					got, err := st.NextSel(ctx, k, sel)
					if err != nil {
						t.Fatalf("%s %s row group %d rows from %d: %v", sc.name, col.Name, g, pos, err)
					}
					whole, err := ref.Next(ctx, k)
					if err != nil {
						t.Fatal(err)
					}
					want := whole.Gather(sel)
					if got.Len != want.Len || got.Type != col.Type {
						t.Fatalf("%s %s row group %d rows from %d: %d rows, want %d", sc.name, col.Name, g, pos, got.Len, want.Len)
					}
					if got.Valid != nil && len(got.Valid) < got.Len {
						t.Fatalf("%s %s: %d validity entries for %d rows", sc.name, col.Name, len(got.Valid), got.Len)
					}
					for r := range want.Len {
						if got.IsNull(r) != want.IsNull(r) || !want.IsNull(r) && !sameValue(got, want, r) {
							t.Fatalf("%s %s row group %d row %d: %v (NULL %v), want %v (NULL %v)", sc.name, col.Name, g,
								pos+int(sel[r]), valueAt(got, r), got.IsNull(r), valueAt(want, r), want.IsNull(r))
						}
					}
					pos += k
				}
				st.Close()
				ref.Close()
			}
		}
	}
}

// TestWalkSelCorrupt: a string's length that runs past the page, or a
// page whose strings end before its bytes do, is corrupt data.
func TestWalkSelCorrupt(t *testing.T) {
	page := func(lens ...uint32) []byte {
		var b []byte
		for _, l := range lens {
			b = binary.LittleEndian.AppendUint32(b, l)
			b = append(b, bytes.Repeat([]byte{'x'}, int(min(l, 8)))...)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		np   int
		sel  []int32
	}{
		{"skipped string too long", page(3, 100, 2), 3, []int32{2}},
		{"selected string too long", page(3, 100, 2), 3, []int32{1}},
		{"a length cut short", page(3, 2)[:9], 2, []int32{1}},
		{"bytes after the last", append(page(3, 2), 0, 0), 2, []int32{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &plainPage{np: tc.np, size: len(tc.data), out: tc.data, have: len(tc.data), pos: []uint32{0}}
			v := vec.NewVector(vec.String, 0)
			err := p.walkSel(v, tc.sel, 0)
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("walkSel: %v, want corrupt data", err)
			}
			p = &plainPage{np: tc.np, size: len(tc.data), out: tc.data, have: len(tc.data), pos: []uint32{0}}
			if err := p.copySel(v, tc.sel, 0); !errors.Is(err, errCorrupt) {
				t.Fatalf("copySel: %v, want corrupt data", err)
			}
		})
	}
}

// valueAt returns row r of v, a string, float or integer.
func valueAt(v *vec.Vector, r int) any {
	switch {
	case v.Type == vec.String:
		return string(v.Str(r))
	case v.Type.IsFloat():
		return v.F64[r]
	}
	return v.I64[r]
}

// sameValue reports whether row r of a and b holds the same value.
func sameValue(a, b *vec.Vector, r int) bool {
	return valueAt(a, r) == valueAt(b, r)
}

// TestNextSelTest reads every string column of strCols with NextSelTest
// under tests of emptiness, in-page matches and values, for selections
// of every shape in uneven steps, and compares the rows and strings
// with NextSel's over a second stream, filtered.
func TestNextSelTest(t *testing.T) {
	for _, layout := range []struct{ groupRows, pageBytes int }{{1000, 1024}, {3000, 64 << 10}} {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[strCols](&buf, parquet.Compression(&parquet.Snappy),
			parquet.MaxRowsPerRowGroup(int64(layout.groupRows)), parquet.PageBufferSize(layout.pageBytes), parquet.DictionaryMaxBytes(256))
		for i := range 3000 {
			if _, err := w.Write([]strCols{strColsRow(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		c := memCatalog(t, "t", buf.Bytes(), 0)
		tb, _ := c.Table("t", false)
		ctx := context.Background()
		rd, err := c.Open(tb)
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name  string
			empty EmptyTest
			match bool
			f     func(s string, null bool) bool
		}{
			{"non-empty", NonEmpty, false, func(s string, null bool) bool { return !null && s != "" }},
			{"empty", EmptyOnly, false, func(s string, null bool) bool { return !null && s == "" }},
			{"contains 1", EmptyAny, true, func(s string, null bool) bool { return !null && strings.Contains(s, "1") }},
			{"prefix a, values", EmptyAny, false, func(s string, null bool) bool { return !null && strings.HasPrefix(s, "a") }},
			{"is null", EmptyAny, false, func(s string, null bool) bool { return null }},
		}
		sels := []func(n int) []int32{
			func(n int) []int32 { return nil },
			func(n int) []int32 { return stride32(0, 1, n) },
			func(n int) []int32 { return stride32(1, 3, (n+1)/3) },
			func(n int) []int32 { return []int32{int32(n - 1)} },
		}
		for _, tc := range tests {
			test := &StringTest{Empty: tc.empty, Values: func(v *vec.Vector) ([]int32, error) {
				var sel []int32
				for i := range v.Len {
					if tc.f(string(v.Str(i)), v.IsNull(i)) {
						sel = append(sel, int32(i))
					}
				}
				return sel, nil
			}}
			if tc.match {
				test.Match = func(b []byte) bool { return tc.f(string(b), false) }
			}
			for si, selOf := range sels {
				for g := range tb.RowGroupRows {
					for j, col := range tb.Columns {
						st, err := rd.Stream(ctx, g, j)
						if err != nil {
							t.Fatal(err)
						}
						ref, err := rd.Stream(ctx, g, j)
						if err != nil {
							t.Fatal(err)
						}
						pos := 0
						for i, step := 0, 1; pos < int(tb.RowGroupRows[g]); i, step = i+1, step*2+5 {
							k := min(step, int(tb.RowGroupRows[g])-pos)
							sel := selOf(k)
							got, kept, err := st.NextSelTest(ctx, k, sel, test)
							if err != nil {
								t.Fatalf("%s %s: %v", tc.name, col.Name, err)
							}
							all, err := ref.NextSel(ctx, k, sel)
							if err != nil {
								t.Fatal(err)
							}
							var want []int32
							var wantStr []string
							for x, r := range sel {
								if tc.f(string(all.Str(x)), all.IsNull(x)) {
									want = append(want, r)
									wantStr = append(wantStr, fmt.Sprintf("%q/%v", all.Str(x), all.IsNull(x)))
								}
							}
							var gotStr []string
							for x := range got.Len {
								gotStr = append(gotStr, fmt.Sprintf("%q/%v", got.Str(x), got.IsNull(x)))
							}
							if fmt.Sprint(kept) != fmt.Sprint(want) || fmt.Sprint(gotStr) != fmt.Sprint(wantStr) {
								t.Fatalf("%s, selection %d, %s, row group %d, rows from %d: %v %v, want %v %v",
									tc.name, si, col.Name, g, pos, kept, gotStr, want, wantStr)
							}
							pos += k
						}
						st.Close()
						ref.Close()
					}
				}
			}
		}
		rd.Close()
	}
}
