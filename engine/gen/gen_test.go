package gen_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"cachebook/engine/gen"
	"cachebook/engine/storage"
	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

func write(t *testing.T, o gen.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gen.Write(context.Background(), &buf, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDeterministic(t *testing.T) {
	for _, order := range []string{"shuffled", "clustered"} {
		t.Run(order, func(t *testing.T) {
			o := gen.Options{Rows: 120000, Order: order, Seed: 7, RowGroupRows: 50000}
			a, b := write(t, o), write(t, o)
			if !bytes.Equal(a, b) {
				t.Fatal("same options gave different files")
			}
			// The number of worker goroutines must not matter either.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			if c := write(t, o); !bytes.Equal(a, c) {
				t.Fatal("one worker and several gave different files")
			}
			runtime.GOMAXPROCS(4)
			if c := write(t, o); !bytes.Equal(a, c) {
				t.Fatal("four workers gave a different file")
			}
			o.Seed = 8
			if c := write(t, o); bytes.Equal(a, c) {
				t.Fatal("different seeds gave the same file")
			}
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, o := range []gen.Options{
		{Rows: 0}, {Rows: -1}, {Rows: 10, Order: "sorted"}, {Rows: 10, Users: 11},
		{Rows: 10, RowGroupRows: -5}, {Rows: 10, From: 5, To: 5}, {Rows: 10, From: -1, To: 5},
		{Rows: 10, From: 5, To: 11}, {Rows: 10, From: 3},
	} {
		if err := gen.Write(context.Background(), &bytes.Buffer{}, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := gen.Write(ctx, &bytes.Buffer{}, gen.Options{Rows: 100000}); err == nil {
		t.Fatal("cancelled write succeeded")
	}
}

func TestWriteFileAtomicAndProgress(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hits.parquet")
	var last, calls int
	err := gen.WriteFile(context.Background(), path, gen.Options{Rows: 20000, Progress: func(done, total int) {
		if total != 20000 || done < last {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
		calls++
	}})
	if err != nil {
		t.Fatal(err)
	}
	if last != 20000 || calls < 2 {
		t.Errorf("progress ended at %d after %d calls", last, calls)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only hits.parquet", len(ents))
	}
	// A failing write leaves no file behind.
	bad := filepath.Join(dir, "bad.parquet")
	if err := gen.WriteFile(context.Background(), bad, gen.Options{Rows: -1}); err == nil {
		t.Fatal("no error")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("failed write left files: %v", ents)
	}
}

func TestSchema(t *testing.T) {
	data := write(t, gen.Options{Rows: 25000, RowGroupRows: 10000, Seed: 1})
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); n != 3 {
		t.Errorf("%d row groups, want 3", n)
	}
	type want struct {
		kind   parquet.Kind
		width  int8 // INT annotation, 0 = none
		signed bool
	}
	i16 := want{parquet.Int32, 16, true}
	wants := map[string]want{
		"WatchID": {kind: parquet.Int64}, "Title": {kind: parquet.ByteArray},
		"EventTime": {kind: parquet.Int64}, "EventDate": {parquet.Int32, 16, false},
		"CounterID": {kind: parquet.Int32}, "ClientIP": {kind: parquet.Int32},
		"RegionID": {kind: parquet.Int32}, "UserID": {kind: parquet.Int64},
		"URL": {kind: parquet.ByteArray}, "Referer": {kind: parquet.ByteArray},
		"IsRefresh": i16, "ResolutionWidth": i16, "MobilePhone": i16,
		"MobilePhoneModel": {kind: parquet.ByteArray}, "TraficSourceID": i16,
		"SearchEngineID": i16, "SearchPhrase": {kind: parquet.ByteArray}, "AdvEngineID": i16,
		"WindowClientWidth": i16, "WindowClientHeight": i16, "IsLink": i16, "IsDownload": i16,
		"DontCountHits": i16, "RefererHash": {kind: parquet.Int64}, "URLHash": {kind: parquet.Int64},
	}
	fields := f.Schema().Fields()
	if len(fields) != len(wants) {
		t.Errorf("%d columns, want %d", len(fields), len(wants))
	}
	for _, fld := range fields {
		w, ok := wants[fld.Name()]
		if !ok {
			t.Errorf("unexpected column %s", fld.Name())
			continue
		}
		if fld.Optional() || fld.Repeated() {
			t.Errorf("%s: not required", fld.Name())
		}
		typ := fld.Type()
		if typ.Kind() != w.kind {
			t.Errorf("%s: kind %v, want %v", fld.Name(), typ.Kind(), w.kind)
		}
		lt := typ.LogicalType()
		if w.width == 0 {
			// ClickBench has no annotation here; parquet-go's struct
			// schemas add the equivalent INT(32|64,true).
			if lt != nil && lt.Value != nil {
				it, ok := lt.Value.(*format.IntType)
				if !ok || !it.IsSigned || (it.BitWidth != 32 && it.BitWidth != 64) {
					t.Errorf("%s: logical type %v, want none or INT(32|64,true)", fld.Name(), lt)
				}
			}
			continue
		}
		it, ok := lt.Value.(*format.IntType)
		if !ok || it.BitWidth != w.width || it.IsSigned != w.signed {
			t.Errorf("%s: logical type %v, want INT(%d,%v)", fld.Name(), lt, w.width, w.signed)
		}
	}
	for _, rg := range f.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			if cc.MetaData.Codec != format.Snappy {
				t.Errorf("%v: codec %v, want SNAPPY", cc.MetaData.PathInSchema, cc.MetaData.Codec)
			}
		}
	}
}

// table loads a generated table through the storage package.
type table struct {
	rows int
	cols map[string]*vec.Vector // concatenated over row groups
}

func load(t *testing.T, o gen.Options) *table {
	t.Helper()
	data := write(t, o)
	cat, err := storage.Open("", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Register("hits", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	tb, err := cat.Table("hits", false)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := cat.Load(context.Background(), tb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := &table{rows: int(tb.Rows), cols: map[string]*vec.Vector{}}
	for i, c := range tb.Columns {
		v := vec.NewVector(c.Type, out.rows)
		for _, b := range batches {
			for r := 0; r < b.Len; r++ {
				v.AppendFrom(b.Vecs[i], r)
			}
		}
		out.cols[c.Name] = v
	}
	return out
}

func (tb *table) i(col string, r int) int64  { return tb.cols[col].I64[r] }
func (tb *table) s(col string, r int) string { return string(tb.cols[col].Str(r)) }

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	} else {
		t.Logf("%s = %.4f (want %.4f ± %.4f)", what, got, want, tol)
	}
}

func TestStatistics(t *testing.T) {
	const rows = 200000
	tb := load(t, gen.Options{Rows: rows, Seed: 42, Order: "shuffled"})
	if tb.rows != rows {
		t.Fatalf("%d rows", tb.rows)
	}
	typ := map[string]vec.Type{"EventDate": vec.Date, "EventTime": vec.Int64, "IsRefresh": vec.Int16,
		"UserID": vec.Int64, "URL": vec.String, "CounterID": vec.Int32}
	for c, want := range typ {
		if got := tb.cols[c].Type; got != want {
			t.Errorf("%s: type %v, want %v", c, got, want)
		}
	}

	users := map[int64]int{}
	phrases := map[string]int{}
	urls := map[string]int{}
	adv := map[int64]int{}
	var emptyPhrase, region229, q36, q40, q41, q42, googleURL, q22, refDomain, special int
	re := regexp.MustCompile(`^https?://(?:www\.)?([^/]+)/.*$`)
	for r := 0; r < rows; r++ {
		users[tb.i("UserID", r)]++
		p := tb.s("SearchPhrase", r)
		phrases[p]++
		if p == "" {
			emptyPhrase++
		}
		u := tb.s("URL", r)
		urls[u]++
		adv[tb.i("AdvEngineID", r)]++
		if tb.i("RegionID", r) == 229 {
			region229++
		}
		d := tb.i("EventDate", r)
		if d < gen.FirstDay || d >= gen.FirstDay+gen.Days {
			t.Fatalf("row %d: EventDate %d outside July 2013", r, d)
		}
		if et := tb.i("EventTime", r); et/86400 != d {
			t.Fatalf("row %d: EventTime %d not on EventDate %d", r, et, d)
		}
		if tb.i("UserID", r) == gen.SpecialUserID {
			special++
		}
		if strings.Contains(u, "google") {
			googleURL++
		}
		if strings.Contains(tb.s("Title", r), "Google") && !strings.Contains(u, ".google.") && p != "" {
			q22++
		}
		if ref := tb.s("Referer", r); ref != "" && re.MatchString(ref) {
			refDomain++
		}
		if tb.i("CounterID", r) == 62 && tb.i("IsRefresh", r) == 0 {
			if tb.i("DontCountHits", r) == 0 && u != "" {
				q36++
			}
			ts := tb.i("TraficSourceID", r)
			if (ts == -1 || ts == 6) && tb.i("RefererHash", r) == gen.SpecialRefererHash {
				q40++
			}
			if tb.i("DontCountHits", r) == 0 && tb.i("URLHash", r) == gen.TopURLHash {
				q41++
			}
			if d == gen.FirstDay+12 || d == gen.FirstDay+13 {
				q42++
			}
		}
	}
	n := float64(rows)
	if want := int(n/gen.UserRowsRatio + 0.5); len(users) != want {
		t.Errorf("%d distinct UserID, want %d", len(users), want)
	}
	counts := make([]int, 0, len(users))
	for _, c := range users {
		counts = append(counts, c)
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	t.Logf("top user counts: %v", counts[:10])
	// "A few ‰" at this size; the share falls as the table grows (≈0.3‰ at
	// 100M rows, as in the real data).
	near(t, "top user share (‰)", 1000*float64(counts[0])/n, 5, 4)
	near(t, "empty SearchPhrase share", float64(emptyPhrase)/n, 0.85, 0.01)
	near(t, "distinct SearchPhrase / rows", float64(len(phrases))/n, 0.06, 0.012)
	near(t, "AdvEngineID=0 share", float64(adv[0])/n, 0.9937, 0.002)
	delete(adv, 0)
	if len(adv) < 8 || len(adv) > 18 {
		t.Errorf("%d non-zero AdvEngineID values", len(adv))
	}
	top := int64(0)
	for k, c := range adv {
		if c > adv[top] {
			top = k
		}
	}
	if top != 2 {
		t.Errorf("most common non-zero AdvEngineID is %d, want 2", top)
	}
	near(t, "RegionID 229 share", float64(region229)/n, 0.18, 0.02)
	topURL, topN := "", 0
	for u, c := range urls {
		if c > topN {
			topURL, topN = u, c
		}
	}
	near(t, "top URL share", float64(topN)/n, 0.033, 0.008)
	t.Logf("top URL %q, %d distinct URLs", topURL, len(urls))
	if special == 0 {
		t.Error("UserID 435090932899640449 (Q19) missing")
	}
	for what, c := range map[string]int{"Q36 rows": q36, "Q40 rows": q40, "Q41 rows": q41, "Q42 rows": q42,
		"URLs with google": googleURL, "Q22 rows": q22, "Referers matching Q28's pattern": refDomain} {
		if c == 0 {
			t.Errorf("no %s", what)
		} else {
			t.Logf("%s: %d", what, c)
		}
	}
}

func TestClusteredOrder(t *testing.T) {
	rows := 50000
	tb := load(t, gen.Options{Rows: rows, Seed: 3, Order: "clustered", RowGroupRows: 16384})
	users := map[int64]bool{}
	for r := 1; r < rows; r++ {
		a := []int64{tb.i("CounterID", r-1), tb.i("EventDate", r-1), tb.i("UserID", r-1), tb.i("EventTime", r-1)}
		b := []int64{tb.i("CounterID", r), tb.i("EventDate", r), tb.i("UserID", r), tb.i("EventTime", r)}
		if slices.Compare(a, b) > 0 {
			t.Fatalf("rows %d,%d out of order: %v > %v", r-1, r, a, b)
		}
	}
	for r := 0; r < rows; r++ {
		users[tb.i("UserID", r)] = true
	}
	if want := int(float64(rows)/gen.UserRowsRatio + 0.5); len(users) != want {
		t.Errorf("%d users, want %d", len(users), want)
	}
	// Shuffled order is not sorted.
	sh := load(t, gen.Options{Rows: 5000, Seed: 3})
	sorted := true
	for r := 1; r < 5000 && sorted; r++ {
		sorted = sh.i("CounterID", r-1) <= sh.i("CounterID", r)
	}
	if sorted {
		t.Error("shuffled table is sorted by CounterID")
	}
}
