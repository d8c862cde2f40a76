package expr

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// filterCols is the schema of the random batches: every type a filter
// kernel reads.
var filterCols = []vec.Column{
	{Name: "b", Type: vec.Bool},
	{Name: "i16", Type: vec.Int16},
	{Name: "i32", Type: vec.Int32},
	{Name: "i64", Type: vec.Int64},
	{Name: "u", Type: vec.UInt64},
	{Name: "f", Type: vec.Float64},
	{Name: "f32", Type: vec.Float32},
	{Name: "s", Type: vec.String},
	{Name: "d", Type: vec.Date},
}

// edge values per column, the constants the predicates compare with.
var filterEdges = map[string][]string{
	"b":   {"true", "false", "0", "1", "2", "-1"},
	"i16": {"0", "-1", "1", "32767", "-32768", "32768", "-32769", "7", "2147483648", "1.5", "-0.5"},
	"i32": {"0", "-1", "2147483647", "-2147483648", "2147483648", "-2147483649", "7", "9223372036854775807", "2.5"},
	"i64": {"0", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "7", "1e19", "-2.5"},
	"u":   {"0", "1", "18446744073709551615", "9223372036854775808", "-1", "7", "1.5"},
	"f":   {"0", "-0.0", "1.5", "'nan'::DOUBLE", "'inf'::DOUBLE", "'-inf'::DOUBLE", "-2", "1e308"},
	"f32": {"0", "1.5", "CAST('nan' AS FLOAT)", "0.1", "3.4028235e38", "-1"},
	"s":   {"''", "'a'", "'ab'", "'b'", "'abc'", "'é'", "'a%'"},
	"d":   {"'2013-07-01'", "DATE '1970-01-01'", "'2013-07-31'"},
}

// randomFilterBatch returns n rows of random values near the edges, about
// a fifth of them NULL where nulls is set.
func randomFilterBatch(r *rand.Rand, n int, nulls bool) *vec.Batch {
	b := &vec.Batch{Len: n}
	for _, c := range filterCols {
		v := vec.NewVector(c.Type, n)
		for i := 0; i < n; i++ {
			if nulls && r.Intn(5) == 0 {
				v.AppendNull()
				continue
			}
			pick := func(xs ...int64) int64 { return xs[r.Intn(len(xs))] }
			switch c.Type {
			case vec.Bool:
				v.AppendInt(int64(r.Intn(2)))
			case vec.Int16:
				v.AppendInt(pick(0, -1, 1, 7, math.MaxInt16, math.MinInt16, int64(r.Intn(20)-10)))
			case vec.Int32:
				v.AppendInt(pick(0, -1, 7, math.MaxInt32, math.MinInt32, int64(r.Intn(20)-10)))
			case vec.Int64, vec.Date:
				v.AppendInt(pick(0, -1, 7, math.MaxInt64, math.MinInt64, 15887, 15917, int64(r.Intn(20)-10)))
			case vec.UInt64:
				v.AppendInt(pick(0, 1, 7, -1, math.MinInt64, int64(r.Intn(20))))
			case vec.Float64:
				fs := []float64{0, math.Copysign(0, -1), 1.5, math.NaN(), math.Inf(1), math.Inf(-1), -2, 1e308, float64(r.Intn(5))}
				v.AppendFloat(fs[r.Intn(len(fs))])
			case vec.Float32:
				fs := []float64{0, 1.5, math.NaN(), 0.1, math.MaxFloat32, -1, math.Inf(1)}
				v.AppendFloat(fs[r.Intn(len(fs))])
			case vec.String:
				ss := []string{"", "a", "ab", "b", "abc", "é", "xaby", "a%", "ba", "aa"}
				v.AppendStr([]byte(ss[r.Intn(len(ss))]))
			}
		}
		b.Vecs = append(b.Vecs, v)
	}
	return b
}

// randomTerm returns one random predicate over filterCols.
func randomTerm(r *rand.Rand) string {
	col := filterCols[r.Intn(len(filterCols))].Name
	k := func() string {
		if r.Intn(12) == 0 {
			return "NULL"
		}
		e := filterEdges[col]
		return e[r.Intn(len(e))]
	}
	ops := []string{"=", "<>", "<", "<=", ">", ">="}
	switch r.Intn(10) {
	case 0, 1, 2, 3:
		if r.Intn(4) == 0 {
			return fmt.Sprintf("%s %s %s", k(), ops[r.Intn(6)], col) // constant first
		}
		return fmt.Sprintf("%s %s %s", col, ops[r.Intn(6)], k())
	case 4:
		not := ""
		if r.Intn(2) == 0 {
			not = "NOT "
		}
		list := []string{k()}
		for j := r.Intn(12); j > 0; j-- {
			list = append(list, k())
		}
		return fmt.Sprintf("%s %sIN (%s)", col, not, strings.Join(list, ", "))
	case 5:
		pats := []string{"'%a%'", "'%ab%'", "'%ba%'", "'%aa%'", "'%é%'", "'a%'", "'%b'", "'ab'", "'%'", "'a%b%'", "'_b%'", "'%é%'", "''"}
		not := ""
		if r.Intn(3) == 0 {
			not = "NOT "
		}
		return fmt.Sprintf("s %sLIKE %s", not, pats[r.Intn(len(pats))])
	case 6:
		if r.Intn(2) == 0 {
			return col + " IS NULL"
		}
		return col + " IS NOT NULL"
	case 7:
		return "b"
	case 8: // generic terms
		gs := []string{"i32 + 1 > 3", "NOT b", "i16 = 1 OR s = ''", "i64 // i32 = 1", "length(s) > 1", "i64 + 1 > 0", "TRUE", "NULL", "i16 * 2 = i32"}
		return gs[r.Intn(len(gs))]
	default: // a computed operand compared with a constant
		xs := []string{"i16 + 1", "abs(i32)", "lower(s)", "CAST(i64 AS DOUBLE)", "CAST(i32 AS UBIGINT)"}
		return fmt.Sprintf("%s %s %s", xs[r.Intn(len(xs))], ops[r.Intn(6)], "1")
	}
}

// wantSelect is the reference: Eval the whole predicate, then Select.
func wantSelect(e Expr, b *vec.Batch) ([]int32, error) {
	v, err := e.Eval(b)
	if err != nil {
		return nil, err
	}
	return Select(v, nil), nil
}

// TestFilterDifferential compares Filter.Select with Eval and Select on
// random batches, predicates and constants at the types' edges: any row
// the fast path keeps or drops wrongly fails it.
func TestFilterDifferential(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var sc FilterScratch
	checked, fast := 0, 0
	for iter := 0; iter < 4000; iter++ {
		n := r.Intn(40)
		if iter%50 == 0 {
			n = 3000 + r.Intn(3000)
		}
		b := randomFilterBatch(r, n, iter%3 != 0)
		terms := make([]string, 1+r.Intn(4))
		for i := range terms {
			terms[i] = randomTerm(r)
		}
		src := strings.Join(terms, " AND ")
		ast, err := sql.ParseExpr(src)
		if err != nil {
			t.Fatalf("parse %q: %v", src, err)
		}
		e, err := (&Binder{Columns: filterCols}).Bind(ast)
		if err != nil || e.Type() != vec.Bool {
			continue // a constant out of range, say: nothing to run
		}
		f := NewFilter(e)
		got, gerr := f.Select(b, &sc)
		want, werr := wantSelect(e, b)
		switch {
		case werr != nil && gerr != nil:
			continue
		case werr != nil:
			// The filter may skip a conjunct that errors on rows an
			// earlier one dropped, as DuckDB does.
			continue
		case gerr != nil:
			t.Fatalf("%s: filter error %v, Eval none", src, gerr)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s (as %s) over %d rows:\n got %v\nwant %v", src, f, n, got, want)
		}
		// Again in the order the measurements give.
		f.reorder()
		if got, err := f.Select(b, &sc); err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s (reordered as %s) over %d rows:\n got %v, %v\nwant %v", src, f, n, got, err, want)
		}
		// SelectFrom keeps those of the rows it is given that pass:
		// none, all, every other one, the last one.
		var odd []int32
		for i := 1; i < n; i += 2 {
			odd = append(odd, int32(i))
		}
		for _, from := range [][]int32{nil, identity(make([]int32, n)), odd, {int32(max(n-1, 0))}} {
			if n == 0 && len(from) > 0 {
				continue
			}
			want := slices.DeleteFunc(slices.Clone(from), func(r int32) bool { _, ok := slices.BinarySearch(want, r); return !ok })
			if got, err := f.SelectFrom(b, from, &sc); err != nil || !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("%s over rows %v of %d:\n got %v, %v\nwant %v", src, from, n, got, err, want)
			}
		}
		checked++
		if k, _ := f.Fast(); k > 0 {
			fast++
		}
	}
	if checked < 2000 || fast < checked/2 {
		t.Fatalf("only %d predicates checked, %d with a fast conjunct", checked, fast)
	}
}

// TestFilterSelect checks each kind of conjunct over the 5-row test batch,
// with the rows it must keep.
func TestFilterSelect(t *testing.T) {
	cols, b := testBatch(t)
	tests := []struct {
		src  string
		want []int32
		fast int // conjuncts that must run as typed loops
	}{
		{"i = 1", []int32{0}, 1},
		{"i <> 1", []int32{1, 3, 4}, 1},
		{"i > -2", []int32{0, 3, 4}, 1},
		{"i >= 4 AND j < 0", []int32{4}, 2},
		{"i < 100000000000", []int32{0, 1, 3, 4}, 1},
		{"f > 0", []int32{0, 4}, 1},
		{"f <= 0", []int32{2, 3}, 1},
		{"s <> ''", []int32{0, 3, 4}, 1},
		{"s = ''", []int32{1}, 1},
		{"s > 'a'", []int32{3, 4}, 1},
		{"s LIKE '%l%'", []int32{0, 3}, 1},
		{"s NOT LIKE 'H%'", []int32{1, 3, 4}, 1},
		{"s LIKE '_ö%'", []int32{3}, 1},
		{"s ILIKE 'h%'", []int32{0}, 0},
		{"i IN (1, 7, NULL)", []int32{0, 4}, 1},
		{"i NOT IN (1, 7)", []int32{1, 3}, 1},
		{"i NOT IN (1, NULL)", nil, 1},
		{"s IN ('', 'Hello')", []int32{0, 1}, 1},
		{"b", []int32{0, 3}, 1},
		{"b AND i > 1", []int32{3}, 2},
		{"f IS NULL", []int32{1}, 1},
		{"j IS NOT NULL AND i IS NOT NULL", []int32{0, 1, 4}, 2},
		{"u > 5", []int32{0, 4}, 1},
		{"u = 18446744073709551615", []int32{4}, 1},
		{"d >= '2013-07-01'", []int32{0, 1}, 1},
		{"i = NULL", nil, 1},
		{"1 < i", []int32{3, 4}, 1},
		{"i + j > 5", []int32{0}, 1},
		{"i > 0 AND i + j > 5", []int32{0}, 2},
		{"i > 0 AND i // 0 = 1", nil, 2},
		{"i > 0 OR s = ''", []int32{0, 1, 3, 4}, 0},
		{"i > 100", nil, 1},
		{"TRUE", []int32{0, 1, 2, 3, 4}, 0},
	}
	var sc FilterScratch
	for _, tt := range tests {
		ast, err := sql.ParseExpr(tt.src)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.src, err)
		}
		e, err := (&Binder{Columns: cols}).Bind(ast)
		if err != nil {
			t.Fatalf("bind %q: %v", tt.src, err)
		}
		f := NewFilter(e)
		got, err := f.Select(b, &sc)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("%s: rows %v, want %v", tt.src, got, tt.want)
		}
		if k, _ := f.Fast(); k != tt.fast {
			t.Errorf("%s (as %s): %d typed conjuncts, want %d", tt.src, f, k, tt.fast)
		}
		// An empty batch selects nothing.
		if got, err := f.Select(sliceTestBatch(b, 0, 0), &sc); err != nil || len(got) != 0 {
			t.Errorf("%s over no rows: %v, %v", tt.src, got, err)
		}
	}
}

func sliceTestBatch(b *vec.Batch, lo, hi int) *vec.Batch {
	out := &vec.Batch{Len: hi - lo}
	for _, v := range b.Vecs {
		out.Vecs = append(out.Vecs, v.Slice(lo, hi))
	}
	return out
}

// TestFilterErrorPosition keeps Eval's errors, with their position, for
// the conjuncts that fall back to it.
func TestFilterErrorPosition(t *testing.T) {
	cols, b := testBatch(t)
	src := "i > -5 AND j * 9223372036854775807 > 0"
	ast, err := sql.ParseExpr(src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := (&Binder{Columns: cols}).Bind(ast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewFilter(e).Select(b, &FilterScratch{})
	se, ok := err.(*sql.Error)
	if !ok || se.Pos.Offset == 0 {
		t.Fatalf("error %v (%T), want an overflow error with its position", err, err)
	}
}

// TestFilterAllocs checks that a fast filter allocates nothing once its
// scratch has grown.
func TestFilterAllocs(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	b := randomFilterBatch(r, 4096, true)
	ast, err := sql.ParseExpr("i32 = 7 AND d >= '2013-07-01' AND s <> '' AND s LIKE '%a%' AND i16 IN (1, 7) AND u > 0 AND f < 1.5")
	if err != nil {
		t.Fatal(err)
	}
	e, err := (&Binder{Columns: filterCols}).Bind(ast)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFilter(e)
	if k, n := f.Fast(); k != n {
		t.Fatalf("%s: %d of %d conjuncts fast", f, k, n)
	}
	var sc FilterScratch
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := f.Select(b, &sc); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per Select, want 0", allocs)
	}
}

// TestWideningCastShares checks that a widening integer cast relabels the
// vector without copying it.
func TestWideningCastShares(t *testing.T) {
	v := &vec.Vector{Type: vec.Int32, Len: 3, I64: []int64{1, -2, 0}, Valid: []bool{true, true, false}}
	for _, to := range []vec.Type{vec.Int64} {
		out, err := CastVector(v, to)
		if err != nil {
			t.Fatal(err)
		}
		if out.Type != to || &out.I64[0] != &v.I64[0] || &out.Valid[0] != &v.Valid[0] {
			t.Fatalf("cast to %s copied or mislabelled: %+v", to, out)
		}
	}
	// Narrowing still checks and copies.
	if _, err := CastVector(&vec.Vector{Type: vec.Int64, Len: 1, I64: []int64{1 << 40}}, vec.Int32); err == nil {
		t.Fatal("narrowing cast out of range: no error")
	}
	for _, tc := range []struct {
		from, to vec.Type
		want     bool
	}{
		{vec.Int16, vec.Int64, true}, {vec.Bool, vec.Int32, true}, {vec.Int32, vec.Int16, false},
		{vec.Int16, vec.UInt64, false}, {vec.Bool, vec.UInt64, true}, {vec.Int64, vec.UInt64, false},
		{vec.Date, vec.Timestamp, false},
	} {
		if got := widens(tc.from, tc.to); got != tc.want {
			t.Errorf("widens(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// FuzzFilter compares Filter.Select with Eval and Select for arbitrary
// predicates over a random batch.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{"i32 = 7 AND s <> ''", "u > 5 AND f >= 'nan'::DOUBLE", "s NOT LIKE '%a%' AND i16 IN (1, NULL)", "b AND d < '2013-07-02'"} {
		f.Add(s)
	}
	b := randomFilterBatch(rand.New(rand.NewSource(3)), 500, true)
	f.Fuzz(func(t *testing.T, src string) {
		ast, err := sql.ParseExpr(src)
		if err != nil {
			return
		}
		e, err := (&Binder{Columns: filterCols}).Bind(ast)
		if err != nil || e.Type() != vec.Bool {
			return
		}
		want, werr := wantSelect(e, b)
		got, gerr := NewFilter(e).Select(b, &FilterScratch{})
		if werr != nil {
			return
		}
		if gerr != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, %v; want %v", src, got, gerr, want)
		}
	})
}

// TestContainsDense checks the whole-buffer substring search on hits
// that span rows, overlap themselves, or sit in empty neighbours.
func TestContainsDense(t *testing.T) {
	tests := []struct {
		rows []string
		lit  string
		want []int32
	}{
		{[]string{"a", "aa"}, "aa", []int32{1}},
		{[]string{"xa", "by", "ab"}, "ab", []int32{2}},
		{[]string{"", "abc", "", "zabcz", ""}, "abc", []int32{1, 3}},
		{[]string{"aaa", "a", "a", "aa"}, "aa", []int32{0, 3}},
		{[]string{"go", "ogle", "google"}, "google", []int32{2}},
		{nil, "a", nil},
		{[]string{"b", "c"}, "a", nil},
	}
	for _, tt := range tests {
		v := vec.NewVector(vec.String, len(tt.rows))
		for _, s := range tt.rows {
			v.AppendStr([]byte(s))
		}
		out := make([]int32, len(tt.rows))
		got := containsDense(v.Offsets, v.Bytes, []byte(tt.lit), false, out)
		if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("%q in %q: rows %v, want %v", tt.lit, tt.rows, got, tt.want)
		}
		var notWant []int32
		for i := range tt.rows {
			if !slices.Contains(tt.want, int32(i)) {
				notWant = append(notWant, int32(i))
			}
		}
		got = containsDense(v.Offsets, v.Bytes, []byte(tt.lit), true, out)
		if !slices.Equal(got, notWant) && !(len(got) == 0 && len(notWant) == 0) {
			t.Errorf("%q not in %q: rows %v, want %v", tt.lit, tt.rows, got, notWant)
		}
	}
}

// TestFilterAdapts checks that a conjunct that drops most rows moves in
// front of one that drops none once Select has measured both.
func TestFilterAdapts(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	b := randomFilterBatch(r, 4096, false)
	ast, err := sql.ParseExpr("i64 <> 12345 AND i32 = 7")
	if err != nil {
		t.Fatal(err)
	}
	e, err := (&Binder{Columns: filterCols}).Bind(ast)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFilter(e)
	if got := f.String(); !strings.HasPrefix(got, "(i64 <> 12345)") {
		t.Fatalf("static order %s, want i64 <> 12345 first (written first, as cheap)", got)
	}
	want, err := wantSelect(e, b)
	if err != nil {
		t.Fatal(err)
	}
	var sc FilterScratch
	for i := 0; i < 2*reorderEvery; i++ {
		got, err := f.Select(b, &sc)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("call %d: %v, %v; want %v", i, got, err, want)
		}
	}
	if got := f.String(); !strings.HasPrefix(got, "(i32 = 7)") {
		t.Fatalf("order after %d calls: %s, want i32 = 7 first", 2*reorderEvery, got)
	}
}

// TestFilterIntEq: IntEq names the column and constant of a filter that
// is one equality of an integer column (cast or not) with a constant,
// and refuses every other filter.
func TestFilterIntEq(t *testing.T) {
	cols, _ := testBatch(t)
	tests := []struct {
		src string
		col int
		c   int64
		ok  bool
	}{
		{"i = 1", 0, 1, true},
		{"1 = i", 0, 1, true},
		{"CAST(i AS BIGINT) = -2", 0, -2, true},
		{"j = 100000000000", 1, 100000000000, true},
		{"d = '2013-07-01'", 4, 15887, true},
		{"i <> 1", 0, 0, false},
		{"i > 1", 0, 0, false},
		{"i = 1 AND j = 2", 0, 0, false},
		{"i + 1 = 2", 0, 0, false},
		{"f = 1.5", 0, 0, false},
		{"s = 'a'", 0, 0, false},
		{"u = 5", 0, 0, false},
		{"ts = '2013-07-15 10:31:45'", 0, 0, false},
		{"i IN (1, 2)", 0, 0, false},
		{"i = NULL", 0, 0, false},
	}
	for _, tt := range tests {
		col, c, ok := NewFilter(bindTest(t, cols, tt.src)).IntEq()
		if ok != tt.ok || ok && (col != tt.col || c != tt.c) {
			t.Errorf("%s: IntEq() = %d, %d, %v; want %d, %d, %v", tt.src, col, c, ok, tt.col, tt.c, tt.ok)
		}
	}
}
