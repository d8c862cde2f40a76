package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cachebook/engine/gen"
	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/deprecated"
)

// allTypes covers every supported Parquet type, plain and dictionary
// encoded, required and optional.
type allTypes struct {
	B       bool      `parquet:"B"`
	I8      int8      `parquet:"I8"`
	I16     int16     `parquet:"I16"`
	I32     int32     `parquet:"I32"`
	I64     int64     `parquet:"I64"`
	U8      uint8     `parquet:"U8"`
	U16     uint16    `parquet:"U16"`
	U32     uint32    `parquet:"U32"`
	U64     uint64    `parquet:"U64"`
	F32     float32   `parquet:"F32"`
	F64     float64   `parquet:"F64"`
	Bytes   []byte    `parquet:"Bytes"`
	Str     string    `parquet:"Str"`
	DictStr string    `parquet:"DictStr,dict"`
	DictI64 int64     `parquet:"DictI64,dict"`
	Date    int32     `parquet:"Date,date"`
	TsMilli time.Time `parquet:"TsMilli,timestamp(millisecond)"`
	TsMicro time.Time `parquet:"TsMicro,timestamp(microsecond)"`
	TsNano  time.Time `parquet:"TsNano,timestamp(nanosecond)"`
	OptI32  *int32    `parquet:"OptI32,optional"`
	OptStr  *string   `parquet:"OptStr,optional"`
	OptDict *string   `parquet:"OptDict,optional,dict"`
	OptF64  *float64  `parquet:"OptF64,optional"`
	// ClickBench's EventDate: INT32 annotated UINT16.
	EventDate uint16 `parquet:"EventDate"`
}

func sampleRow(i int) allTypes {
	ts := time.Date(2013, 7, 15, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * 1001 * time.Microsecond)
	r := allTypes{
		B: i%3 == 0, I8: int8(i%200 - 100), I16: int16(i*7 - 30000), I32: int32(i*1000003 - 1<<30),
		I64: int64(i) * -987654321987, U8: uint8(i), U16: uint16(i * 3), U32: uint32(i) * 4000000007,
		U64: uint64(i) * 0x9e3779b97f4a7c15, F32: float32(i) / 4, F64: float64(i) * 1.5,
		Bytes: []byte(fmt.Sprintf("b%d", i)), Str: fmt.Sprintf("s%d", i*i),
		DictStr: fmt.Sprintf("d%d", i%5), DictI64: int64(i % 7), Date: int32(15000 + i%100),
		TsMilli: ts.Truncate(time.Millisecond), TsMicro: ts, TsNano: ts.Add(123 * time.Nanosecond),
		EventDate: uint16(15888 + i%30),
	}
	if i%4 != 1 {
		x := int32(i)
		r.OptI32 = &x
	}
	if i%5 != 2 {
		s := fmt.Sprintf("o%d", i)
		r.OptStr = &s
	}
	if i%3 != 0 {
		s := fmt.Sprintf("od%d", i%4)
		r.OptDict = &s
	}
	if i < 100 || i%2 == 0 {
		f := float64(i) / 8
		r.OptF64 = &f
	}
	return r
}

func writeAllTypes(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[allTypes](&buf, parquet.Compression(&snappy.Codec{}),
		parquet.MaxRowsPerRowGroup(1000), parquet.PageBufferSize(2048))
	rows := make([]allTypes, n)
	for i := range rows {
		rows[i] = sampleRow(i)
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// want returns the expected engine value of column col in row i.
func want(col string, i int) any {
	r := sampleRow(i)
	switch col {
	case "B":
		return r.B
	case "I8":
		return int64(r.I8)
	case "I16":
		return int64(r.I16)
	case "I32":
		return int64(r.I32)
	case "I64":
		return r.I64
	case "U8":
		return int64(r.U8)
	case "U16":
		return int64(r.U16)
	case "U32":
		return int64(r.U32)
	case "U64":
		return r.U64
	case "F32":
		return r.F32
	case "F64":
		return r.F64
	case "Bytes":
		return string(r.Bytes)
	case "Str":
		return r.Str
	case "DictStr":
		return r.DictStr
	case "DictI64":
		return r.DictI64
	case "Date":
		return time.Unix(int64(r.Date)*86400, 0).UTC()
	case "TsMilli":
		return r.TsMilli.UTC()
	case "TsMicro":
		return r.TsMicro.UTC()
	case "TsNano":
		return r.TsNano.UTC() // TIMESTAMP_NS keeps its nanoseconds
	case "OptI32":
		if r.OptI32 == nil {
			return nil
		}
		return int64(*r.OptI32)
	case "OptStr":
		if r.OptStr == nil {
			return nil
		}
		return *r.OptStr
	case "OptDict":
		if r.OptDict == nil {
			return nil
		}
		return *r.OptDict
	case "OptF64":
		if r.OptF64 == nil {
			return nil
		}
		return *r.OptF64
	case "EventDate":
		return time.Unix(int64(r.EventDate)*86400, 0).UTC()
	}
	panic(col)
}

var wantTypes = map[string]vec.Type{
	"B": vec.Bool, "I8": vec.Int16, "I16": vec.Int16, "I32": vec.Int32, "I64": vec.Int64,
	"U8": vec.Int16, "U16": vec.Int32, "U32": vec.Int64, "U64": vec.UInt64, "F32": vec.Float32,
	"F64": vec.Float64, "Bytes": vec.String, "Str": vec.String, "DictStr": vec.String,
	"DictI64": vec.Int64, "Date": vec.Date, "TsMilli": vec.Timestamp, "TsMicro": vec.Timestamp,
	"TsNano": vec.TimestampNS, "OptI32": vec.Int32, "OptStr": vec.String, "OptDict": vec.String,
	"OptF64": vec.Float64, "EventDate": vec.Date,
}

func memCatalog(t testing.TB, name string, data []byte, budget int64) *Catalog {
	t.Helper()
	c, err := Open("", budget)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Register(name, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	return c
}

// wholeAndReader returns table name of c, every row group of it decoded
// whole, and a reader of it, closed when the test ends: what a test of
// streams compares them with.
func wholeAndReader(t testing.TB, c *Catalog, name string) (*Table, []*vec.Batch, *Reader) {
	t.Helper()
	tb, rd := tableReader(t, c, name)
	all, err := c.Load(context.Background(), tb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tb, all, rd
}

// tableReader returns table name of c and a reader of it, closed when
// the test ends.
func tableReader(t testing.TB, c *Catalog, name string) (*Table, *Reader) {
	t.Helper()
	tb, err := c.Table(name, false)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := c.Open(tb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return tb, rd
}

func TestRoundTripAllTypes(t *testing.T) {
	const n = 2500
	data := writeAllTypes(t, n)
	c := memCatalog(t, "t", data, 1<<30)
	tb, err := c.Table("t", false)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Rows != n || len(tb.RowGroupRows) != 3 {
		t.Fatalf("rows %d, row groups %v", tb.Rows, tb.RowGroupRows)
	}
	for _, col := range tb.Columns {
		if col.Type != wantTypes[col.Name] {
			t.Errorf("%s: type %v, want %v", col.Name, col.Type, wantTypes[col.Name])
		}
	}
	// Request a subset in a different order, with a repeat.
	cols := []string{"OptDict", "I64", "DictStr", "B", "TsNano", "OptStr", "I64"}
	var lastDone int64
	batches, err := c.Load(context.Background(), tb, cols, func(done, total int64) {
		if total != n || done < lastDone {
			t.Errorf("progress %d/%d", done, total)
		}
		lastDone = done
	})
	if err != nil {
		t.Fatal(err)
	}
	if lastDone != n {
		t.Errorf("progress ended at %d", lastDone)
	}
	check := func(batches []*vec.Batch, cols []string) {
		t.Helper()
		row := 0
		for _, b := range batches {
			if len(b.Vecs) != len(cols) {
				t.Fatalf("%d vectors, want %d", len(b.Vecs), len(cols))
			}
			for r := 0; r < b.Len; r++ {
				for k, col := range cols {
					v := b.Vecs[k]
					if v.Len != b.Len {
						t.Fatalf("%s: vector len %d, batch %d", col, v.Len, b.Len)
					}
					got, w := v.Value(r), want(col, row)
					if gt, ok := got.(time.Time); ok {
						if !gt.Equal(w.(time.Time)) {
							t.Fatalf("%s row %d: %v, want %v", col, row, got, w)
						}
						continue
					}
					if got != w {
						t.Fatalf("%s row %d: %v (%T), want %v (%T)", col, row, got, got, w, w)
					}
				}
				row++
			}
		}
		if row != n {
			t.Fatalf("%d rows, want %d", row, n)
		}
	}
	check(batches, cols)
	// All columns, now partly from the cache.
	all, err := c.Load(context.Background(), tb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tb.Columns))
	for i, col := range tb.Columns {
		names[i] = col.Name
	}
	check(all, names)
	// OptF64 has no NULL in the first row group.
	if all[0].Vecs[slicesIndex(names, "OptF64")].Valid != nil && n > 100 {
		// allowed but then all must be true in the first 100 rows
		for r := 0; r < 100; r++ {
			if all[0].Vecs[slicesIndex(names, "OptF64")].IsNull(r) {
				t.Fatal("unexpected NULL")
			}
		}
	}
	if _, err := c.Load(context.Background(), tb, []string{"Nope"}, nil); err == nil || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("unknown column: %v", err)
	}
}

func slicesIndex(s []string, x string) int {
	for i, y := range s {
		if y == x {
			return i
		}
	}
	return -1
}

// TestDictionaryPages checks that the dict columns really are dictionary
// encoded, so the dictionary path of the decoder is exercised.
func TestDictionaryPages(t *testing.T) {
	data := writeAllTypes(t, 500)
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"DictStr", "DictI64", "OptDict"} {
		leaf, _ := f.Schema().Lookup(name)
		pages := f.RowGroups()[0].ColumnChunks()[leaf.ColumnIndex].Pages()
		p, err := pages.ReadPage()
		if err != nil {
			t.Fatal(err)
		}
		if p.Dictionary() == nil {
			t.Errorf("%s: page is not dictionary encoded", name)
		}
		pages.Close()
	}
}

func TestGeneratedFile(t *testing.T) {
	dir := t.TempDir()
	if err := gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"),
		gen.Options{Rows: 30000, RowGroupRows: 8192, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ref := range []struct {
		s      string
		isFile bool
	}{{"hits", false}, {"hits.parquet", true}, {"./hits.parquet", true}} {
		tb, err := c.Table(ref.s, ref.isFile)
		if err != nil {
			t.Fatalf("%v: %v", ref, err)
		}
		if tb.Name != "hits" || tb.Rows != 30000 || len(tb.RowGroupRows) != 4 {
			t.Errorf("%v: %+v", ref, tb)
		}
	}
	tb, _ := c.Table("hits", false)
	types := map[string]vec.Type{}
	for _, col := range tb.Columns {
		types[col.Name] = col.Type
	}
	for col, w := range map[string]vec.Type{"EventDate": vec.Date, "EventTime": vec.Int64, "IsRefresh": vec.Int16,
		"UserID": vec.Int64, "Title": vec.String, "CounterID": vec.Int32, "MobilePhoneModel": vec.String} {
		if types[col] != w {
			t.Errorf("%s: %v, want %v", col, types[col], w)
		}
	}
	bs, err := c.Load(context.Background(), tb, []string{"EventDate", "EventTime", "MobilePhoneModel"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	models := 0
	for _, b := range bs {
		for r := 0; r < b.Len; r++ {
			d := b.Vecs[0].I64[r]
			if d < gen.FirstDay || d >= gen.FirstDay+gen.Days || b.Vecs[1].I64[r]/86400 != d {
				t.Fatalf("bad date %d / time %d", d, b.Vecs[1].I64[r])
			}
			if len(b.Vecs[2].Str(r)) > 0 {
				models++
			}
		}
	}
	if models == 0 {
		t.Error("no MobilePhoneModel")
	}
	infos, err := c.Tables()
	if err != nil || len(infos) != 1 || infos[0].Name != "hits" || infos[0].Rows != 30000 || len(infos[0].Columns) != 25 {
		t.Errorf("Tables: %+v, %v", infos, err)
	}
}

func TestPathEscapes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	os.Mkdir(dir, 0o755)
	data := writeAllTypes(t, 10)
	os.WriteFile(filepath.Join(base, "secret.parquet"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "ok.parquet"), data, 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "in.parquet"), data, 0o644)
	symErr := os.Symlink(filepath.Join(base, "secret.parquet"), filepath.Join(dir, "link.parquet"))
	os.Symlink("ok.parquet", filepath.Join(dir, "inside.parquet"))
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ok := range []string{"ok.parquet", "sub/in.parquet", "sub/../ok.parquet"} {
		if _, err := c.Table(ok, true); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if symErr == nil {
		if _, err := c.Table("inside.parquet", true); err != nil {
			t.Errorf("symlink inside the directory refused: %v", err)
		}
	}
	bad := []string{"../secret.parquet", filepath.Join(base, "secret.parquet"), "/etc/passwd", "sub/../../secret.parquet", ""}
	if symErr == nil {
		bad = append(bad, "link.parquet")
	}
	for _, p := range bad {
		_, err := c.Table(p, true)
		if err == nil {
			t.Errorf("%q: opened a file outside the data directory", p)
			continue
		}
		t.Logf("%q: %v", p, err)
	}
	for _, name := range []string{"../secret", "a/b", "x.y", ""} {
		if _, err := c.Table(name, false); err == nil {
			t.Errorf("table name %q accepted", name)
		}
	}
	if _, err := c.Table("missing", false); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("missing table: %v", err)
	}
	infos, err := c.Tables()
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range infos {
		if ti.Name == "link" && ti.Err == "" {
			t.Errorf("Tables opened the escaping symlink: %+v", ti)
		}
	}
}

// TestCacheSecondChance: a column that is a small share of the cache is
// kept from its first read; one larger than a sixteenth of the budget only
// from its second, so that one pass over a big table does not fill the
// cache.
func TestCacheSecondChance(t *testing.T) {
	data := writeAllTypes(t, 3000)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		budget       int64
		keptAfterOne bool
	}{
		{"small column", 10 << 20, true},
		{"large column", 100_000, false},
	} {
		c := memCatalog(t, "t", data, tc.budget)
		tb, _ := c.Table("t", false)
		if _, err := c.Load(ctx, tb, []string{"I64"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, n := c.CacheStats(); (n == 3) != tc.keptAfterOne {
			t.Errorf("%s: %d of 3 chunks kept after the first read", tc.name, n)
		}
		if _, err := c.Load(ctx, tb, []string{"I64"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, n := c.CacheStats(); n != 3 {
			t.Errorf("%s: %d of 3 chunks kept after the second read", tc.name, n)
		}
		d := c.Decodes()
		if _, err := c.Load(ctx, tb, []string{"I64"}, nil); err != nil {
			t.Fatal(err)
		}
		if c.Decodes() != d {
			t.Errorf("%s: the third read decoded again", tc.name)
		}
	}
}

func TestCacheEviction(t *testing.T) {
	data := writeAllTypes(t, 3000)
	// Each int64 column of 3000 rows is about 24 KB; allow two of them.
	c := memCatalog(t, "t", data, 50_000)
	tb, _ := c.Table("t", false)
	ctx := context.Background()
	load := func(cols ...string) {
		t.Helper()
		if _, err := c.Load(ctx, tb, cols, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Each column is more than a sixteenth of the budget, so it is kept
	// from its second read on (TestCacheSecondChance).
	load("I64")
	load("I64")
	load("U64")
	load("U64")
	// The cache holds column chunks: 3 row groups of 1000 rows each.
	if b, n := c.CacheStats(); n != 6 || b > 50_000 {
		t.Fatalf("after two columns: %d bytes, %d chunks", b, n)
	}
	d0 := c.decodes.Load()
	load("I64") // hit; I64 becomes most recent
	if c.decodes.Load() != d0 {
		t.Error("cached column decoded again")
	}
	load("F64")
	load("F64") // kept now: evicts U64
	if _, n := c.CacheStats(); n != 6 {
		t.Errorf("%d chunks cached, want 6", n)
	}
	d1 := c.decodes.Load()
	load("I64")
	if c.decodes.Load() != d1 {
		t.Error("I64 was evicted, U64 should have been")
	}
	load("U64")
	if c.decodes.Load() != d1+3 {
		t.Error("U64 was not evicted")
	}
	// A column larger than the whole budget is served but not kept.
	small := memCatalog(t, "t", data, 1000)
	tb2, _ := small.Table("t", false)
	if _, err := small.Load(ctx, tb2, []string{"I64"}, nil); err != nil {
		t.Fatal(err)
	}
	if b, n := small.CacheStats(); b != 0 || n != 0 {
		t.Errorf("oversized column cached: %d bytes, %d columns", b, n)
	}
	// Re-registering a name invalidates its cached columns.
	if err := c.Register("t", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	tb3, _ := c.Table("t", false)
	d2 := c.decodes.Load()
	if _, err := c.Load(ctx, tb3, []string{"I64"}, nil); err != nil {
		t.Fatal(err)
	}
	if c.decodes.Load() != d2+3 {
		t.Error("re-registered table served from the old cache entry")
	}
}

func TestFileChangeInvalidates(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.parquet")
	os.WriteFile(p, writeAllTypes(t, 100), 0o644)
	c, _ := Open(dir, 1<<30)
	defer c.Close()
	tb, err := c.Table("t", false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, writeAllTypes(t, 200), 0o644)
	os.Chtimes(p, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	if _, err := c.Load(context.Background(), tb, []string{"I64"}, nil); err == nil {
		t.Error("stale table loaded a changed file")
	}
	tb, _ = c.Table("t", false)
	bs, err := c.Load(context.Background(), tb, []string{"I64"}, nil)
	if err != nil || tb.Rows != 200 || bs[0].Len+bs[len(bs)-1].Len == 0 {
		t.Errorf("reloaded: rows %d, err %v", tb.Rows, err)
	}
}

func TestConcurrentLoad(t *testing.T) {
	data := writeAllTypes(t, 3000)
	c := memCatalog(t, "t", data, 1<<30)
	tb, _ := c.Table("t", false)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cols := []string{"Str", "I64", "OptStr"}
			if g%2 == 1 {
				cols = []string{"I64", "DictStr"}
			}
			bs, err := c.Load(context.Background(), tb, cols, nil)
			if err != nil {
				errs <- err
				return
			}
			if bs[0].Vecs[0].Len != 1000 {
				errs <- fmt.Errorf("len %d", bs[0].Vecs[0].Len)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d := c.decodes.Load(); d > 4*3 {
		t.Errorf("%d chunk decodes for 4 distinct columns of 3 row groups", d)
	}
}

func TestCancelledLoad(t *testing.T) {
	data := writeAllTypes(t, 3000)
	c := memCatalog(t, "t", data, 1<<30)
	tb, _ := c.Table("t", false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Load(ctx, tb, []string{"I64"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled load: %v", err)
	}
	// The failure is not cached.
	if _, err := c.Load(context.Background(), tb, []string{"I64"}, nil); err != nil {
		t.Error(err)
	}
}

func TestUnsupportedTypes(t *testing.T) {
	type fixed struct {
		ID  int64    `parquet:"ID"`
		Arr [16]byte `parquet:"Arr"`
	}
	type rep struct {
		L []int32 `parquet:"L"`
	}
	// An unsupported leaf type fails only the queries that read it.
	for name, write := range map[string]func(*bytes.Buffer) error{
		"Arr": func(b *bytes.Buffer) error { return parquet.Write(b, []fixed{{ID: 1}}) },
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		c := memCatalog(t, "u", buf.Bytes(), 1<<20)
		tb, err := c.Table("u", false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var col vec.Column
		for _, c := range tb.Columns {
			if c.Name == name {
				col = c
			}
		}
		if col.Err == nil || !strings.Contains(col.Err.Error(), `"`+name+`"`) || !strings.Contains(col.Err.Error(), "memory:u") {
			t.Errorf("%s: column error %v should name the column and the file", name, col.Err)
		}
		if bs, err := c.Load(context.Background(), tb, []string{"ID"}, nil); err != nil || bs[0].Vecs[0].I64[0] != 1 {
			t.Errorf("%s: loading the other column: %v", name, err)
		}
		if _, err := c.Load(context.Background(), tb, []string{name}, nil); !errors.Is(err, col.Err) {
			t.Errorf("%s: loading it: %v, want %v", name, err, col.Err)
		}
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []rep{{L: []int32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t, "u", buf.Bytes(), 1<<20)
	if _, err := c.Table("u", false); err == nil || !strings.Contains(err.Error(), `"L"`) {
		t.Errorf("repeated column: error %v should name the column", err)
	}
}

// TestInt96 reads INT96 timestamps (nanoseconds of the day and a Julian
// day, as Impala, Hive and Spark wrote them) as TIMESTAMP, before and
// after 1970, with NULLs.
func TestInt96(t *testing.T) {
	type row struct {
		TS *deprecated.Int96 `parquet:"TS,optional"`
	}
	mk := func(day int32, nanos uint64) *deprecated.Int96 {
		return &deprecated.Int96{uint32(nanos), uint32(nanos >> 32), uint32(day)}
	}
	rows := []row{
		{mk(2440588, 0)}, // 1970-01-01 00:00:00
		{mk(2440588+15901, 12*3600e9+34*60e9+56e9+789e3)}, // 2013-07-15 12:34:56.000789
		{nil},
		{mk(2440587, 86399e9+999999999)}, // 1969-12-31 23:59:59.999999999
	}
	want := []any{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2013, 7, 15, 12, 34, 56, 789000, time.UTC),
		nil, time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC)}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t, "i96", buf.Bytes(), 1<<20)
	tb, err := c.Table("i96", false)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Columns[0].Type != vec.Timestamp {
		t.Fatalf("type %v, want TIMESTAMP", tb.Columns[0].Type)
	}
	bs, err := c.Load(context.Background(), tb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := bs[0].Vecs[0]
	for i, w := range want {
		if got := v.Value(i); got != w {
			t.Errorf("row %d: %v, want %v", i, got, w)
		}
	}
}

// loadAll opens and fully loads a file held in memory, returning the first
// error. It must never panic.
func loadAll(data []byte) error {
	c, err := Open("", 1<<20)
	if err != nil {
		return err
	}
	if err := c.Register("f", bytes.NewReader(data), int64(len(data))); err != nil {
		return err
	}
	tb, err := c.Table("f", false)
	if err != nil {
		return err
	}
	_, err = c.Load(context.Background(), tb, nil, nil)
	return err
}

func TestCorruptFiles(t *testing.T) {
	data := writeAllTypes(t, 1200)
	if err := loadAll(data); err != nil {
		t.Fatal(err)
	}
	errorsSeen := 0
	for _, n := range []int{0, 3, 4, 8, 100, len(data) / 2, len(data) - 9, len(data) - 1} {
		err := loadAll(data[:n])
		if err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
			continue
		}
		if !strings.Contains(err.Error(), "memory:f") {
			t.Errorf("error does not name the file: %v", err)
		}
		errorsSeen++
	}
	// Bit flips all over the file: errors or (rarely) different values,
	// never a panic.
	for i := 0; i < 150; i++ {
		d := bytes.Clone(data)
		pos := (i*104729 + 13) % len(d)
		d[pos] ^= 1 << (i % 8)
		if err := loadAll(d); err != nil {
			if !strings.Contains(err.Error(), "memory:f") {
				t.Errorf("flip at %d: error does not name the file: %v", pos, err)
			}
			errorsSeen++
		}
	}
	t.Logf("%d corrupt inputs rejected with an error", errorsSeen)
	// A corrupt file on disk names its path.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.parquet"), data[:len(data)/2], 0o644)
	c, _ := Open(dir, 0)
	defer c.Close()
	if _, err := c.Table("bad", false); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
		t.Errorf("corrupt file on disk: %v", err)
	}
	infos, err := c.Tables()
	if err != nil || len(infos) != 1 || infos[0].Err == "" {
		t.Errorf("Tables on a corrupt file: %+v %v", infos, err)
	}
}

func FuzzOpen(f *testing.F) {
	f.Add(writeAllTypes(f, 50))
	f.Add([]byte("PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	var buf bytes.Buffer
	if err := gen.Write(context.Background(), &buf, gen.Options{Rows: 200}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = loadAll(data)
	})
}

// TestColumnStream reads every column through streams in uneven steps,
// skipping some, and compares with whole-chunk decoding.
func TestColumnStream(t *testing.T) {
	data := writeAllTypes(t, 3000) // 3 row groups, pages of 2 KiB
	c := memCatalog(t, "t", data, 0)
	tb, _ := c.Table("t", false)
	checkStreams(t, c, tb)
}

// checkStreams reads every column of tb through streams in uneven steps,
// some of them skipped, so that steps start and end inside pages, and
// compares the rows with whole-chunk decoding.
func checkStreams(t *testing.T, c *Catalog, tb *Table) {
	t.Helper()
	ctx := context.Background()
	tb, all, rd := wholeAndReader(t, c, tb.Name)
	for g, b := range all {
		for j := range tb.Columns {
			st, err := rd.Stream(ctx, g, j)
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			for step := 1; pos < b.Len; step = step*3 + 1 {
				if step%2 == 0 {
					if err := st.Skip(ctx, step); err != nil {
						t.Fatal(err)
					}
					pos += step
					continue
				}
				v, err := st.Next(ctx, step)
				if err != nil {
					t.Fatalf("%s row group %d: %v", tb.Columns[j].Name, g, err)
				}
				want := b.Vecs[j].Slice(pos, min(pos+step, b.Len))
				if v.Len != want.Len {
					t.Fatalf("%s: %d rows, want %d", tb.Columns[j].Name, v.Len, want.Len)
				}
				for i := 0; i < v.Len; i++ {
					if v.Format(i) != want.Format(i) {
						t.Fatalf("%s row group %d row %d: %s, want %s", tb.Columns[j].Name, g, pos+i, v.Format(i), want.Format(i))
					}
				}
				pos += step
			}
			if v, err := st.Next(ctx, 10); err != nil || v.Len != 0 {
				t.Errorf("past the end: %v rows, %v", v, err)
			}
			st.Close()
			checkRecycled(t, rd, g, j, b.Vecs[j])
		}
	}
}

// checkRecycled reads column j of row group g through a stream in equal
// steps, giving each vector back spoiled, so that every step converts
// into the arrays of the one before: a row the conversion left unwritten
// would show the spoiled value.
func checkRecycled(t *testing.T, rd *Reader, g, j int, want *vec.Vector) {
	t.Helper()
	ctx := context.Background()
	st, err := rd.Stream(ctx, g, j)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const step = 333
	for pos := 0; pos < want.Len; pos += step {
		v, err := st.Next(ctx, step)
		if err != nil {
			t.Fatal(err)
		}
		w := want.Slice(pos, min(pos+step, want.Len))
		if v.Len != w.Len {
			t.Fatalf("column %d row group %d: %d rows, want %d", j, g, v.Len, w.Len)
		}
		for i := 0; i < v.Len; i++ {
			if v.Format(i) != w.Format(i) {
				t.Fatalf("column %d row group %d row %d, recycled: %s, want %s", j, g, pos+i, v.Format(i), w.Format(i))
			}
		}
		all := v.I64[:cap(v.I64)]
		for i := range all {
			all[i] = -0x5eed
		}
		st.Recycle(v)
	}
}

// TestColumnStreamNextSel reads chosen rows of every column, of every
// type, NULLs among them, with NextSel, after steps read and skipped
// whole, and compares them with whole-chunk decoding; a selection out
// of range is an error.
func TestColumnStreamNextSel(t *testing.T) {
	data := writeAllTypes(t, 3000) // 3 row groups, pages of 2 KiB
	tb, all, rd := wholeAndReader(t, memCatalog(t, "t", data, 0), "t")
	ctx := context.Background()
	// Steps of n rows and the rows of each to convert, one after
	// another from the row group's first row on (1,000 rows in all).
	steps := []struct {
		n   int
		sel []int32
	}{
		{10, nil},                             // none
		{5, []int32{0, 1, 2, 3, 4}},           // all
		{300, []int32{0, 299}},                // the ends, pages apart
		{185, []int32{3, 4, 5, 90, 100, 101}}, // runs
		{200, []int32{150}},                   // one
		{300, stride32(1, 3, 100)},            // every third
	}
	for g, b := range all {
		for j := range tb.Columns {
			for _, whole := range []bool{false, true} {
				st, err := rd.Stream(ctx, g, j)
				if whole {
					st = StreamOf(b.Vecs[j])
				}
				if err != nil {
					t.Fatal(err)
				}
				pos := 0
				for _, s := range steps {
					v, err := st.NextSel(ctx, s.n, s.sel)
					if err != nil {
						t.Fatalf("%s row group %d: %v", tb.Columns[j].Name, g, err)
					}
					if v.Len != len(s.sel) {
						t.Fatalf("%s row group %d: %d rows, want %d", tb.Columns[j].Name, g, v.Len, len(s.sel))
					}
					for i, r := range s.sel {
						if got, want := v.Format(i), b.Vecs[j].Format(pos+int(r)); got != want {
							t.Fatalf("%s row group %d row %d (whole %v): %s, want %s", tb.Columns[j].Name, g, pos+int(r), whole, got, want)
						}
					}
					pos += s.n
				}
				if _, err := st.NextSel(ctx, 4, []int32{4}); err == nil {
					t.Errorf("%s: row 4 of 4 read without an error", tb.Columns[j].Name)
				}
				st.Close()
			}
		}
	}
}

func stride32(from, step, n int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(from + i*step)
	}
	return r
}

// TestOptionalBool reads a BOOLEAN column with NULLs (DuckDB writes its
// BOOLEAN columns this way), over several pages.
func TestOptionalBool(t *testing.T) {
	type row struct {
		B *bool `parquet:"B,optional"`
	}
	var rows []row
	var want []any
	for i := 0; i < 5000; i++ {
		if i%7 == 3 {
			rows = append(rows, row{})
			want = append(want, nil)
			continue
		}
		b := i%3 == 0
		rows = append(rows, row{&b})
		want = append(want, b)
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.PageBufferSize(512))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t, "ob", buf.Bytes(), 1<<20)
	tb, err := c.Table("ob", false)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := c.Load(context.Background(), tb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, b := range bs {
		for r := 0; r < b.Len; r++ {
			if got := b.Vecs[0].Value(r); got != want[i] {
				t.Fatalf("row %d: %v, want %v", i, got, want[i])
			}
			i++
		}
	}
	if i != len(want) {
		t.Fatalf("%d rows, want %d", i, len(want))
	}
	checkStreams(t, c, tb)
}

// TestDecimal reads DECIMAL columns stored as INT32, INT64 and
// FIXED_LEN_BYTE_ARRAY as DOUBLE, negative values and NULLs included.
func TestDecimal(t *testing.T) {
	type row struct {
		D32 int32    `parquet:"D32,decimal(2:9)"`
		D64 *int64   `parquet:"D64,decimal(3:18),optional"`
		D16 [13]byte `parquet:"D16,decimal(1:30)"`
	}
	be := func(x int64) (b [13]byte) {
		for i := 12; i >= 0; i-- {
			b[i] = byte(x)
			x >>= 8
		}
		return b
	}
	p := func(x int64) *int64 { return &x }
	rows := []row{{12345, p(-1500), be(-25)}, {-5, nil, be(1)}, {0, p(7), be(123456789)}}
	want := [][]any{{123.45, -1.5, -2.5}, {-0.05, nil, 0.1}, {0.0, 0.007, 12345678.9}}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t, "dec", buf.Bytes(), 1<<20)
	tb, err := c.Table("dec", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range tb.Columns {
		if col.Type != vec.Float64 || col.Err != nil {
			t.Fatalf("column %s: %v %v, want DOUBLE", col.Name, col.Type, col.Err)
		}
	}
	bs, err := c.Load(context.Background(), tb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for r, w := range want {
		for j, x := range w {
			if got := bs[0].Vecs[j].Value(r); got != x {
				t.Errorf("row %d column %d: %v, want %v", r, j, got, x)
			}
		}
	}
}
