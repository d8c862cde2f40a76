package difftest

import (
	"context"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"cachebook/engine/gen"
)

func TestParseShape(t *testing.T) {
	tests := []struct {
		q             string
		order         []string
		limit, offset int64
		ordered       string
		keys          []KeyRef
	}{
		{q: "SELECT COUNT(*) FROM hits;", limit: -1, ordered: "SELECT COUNT(*) FROM hits"},
		{
			q:     "SELECT RegionID, COUNT(DISTINCT UserID) AS u FROM hits GROUP BY RegionID ORDER BY u DESC LIMIT 10;",
			order: []string{"u"}, limit: 10,
			ordered: "SELECT RegionID, COUNT(DISTINCT UserID) AS u FROM hits GROUP BY RegionID ORDER BY u DESC",
			keys:    []KeyRef{{Col: 1, Hidden: -1}},
		},
		{
			q:     "SELECT UserID, COUNT(*) FROM hits GROUP BY UserID ORDER BY COUNT(*) DESC LIMIT 10;",
			order: []string{"COUNT(*)"}, limit: 10,
			ordered: "SELECT UserID, COUNT(*) FROM hits GROUP BY UserID ORDER BY COUNT(*) DESC",
			keys:    []KeyRef{{Col: 1, Hidden: -1}},
		},
		{
			q:     "SELECT UserID FROM hits GROUP BY UserID ORDER BY COUNT(*) DESC, UserID LIMIT 10;",
			order: []string{"COUNT(*)", "UserID"}, limit: 10,
			ordered: "SELECT UserID, COUNT(*) AS __difftest_key0 FROM hits GROUP BY UserID ORDER BY COUNT(*) DESC, UserID",
			keys:    []KeyRef{{Col: -1, Hidden: 0}, {Col: 0, Hidden: -1}},
		},
		{
			q:     "SELECT SearchPhrase FROM hits WHERE SearchPhrase <> '' ORDER BY EventTime, SearchPhrase LIMIT 10;",
			order: []string{"EventTime", "SearchPhrase"}, limit: 10,
			ordered: "SELECT SearchPhrase, EventTime AS __difftest_key0 FROM hits WHERE SearchPhrase <> '' ORDER BY EventTime, SearchPhrase",
			keys:    []KeyRef{{Col: -1, Hidden: 0}, {Col: 0, Hidden: -1}},
		},
		{
			q:     "SELECT * FROM hits WHERE URL LIKE '%google%' ORDER BY EventTime LIMIT 10;",
			order: []string{"EventTime"}, limit: 10,
			ordered: "SELECT *, EventTime AS __difftest_key0 FROM hits WHERE URL LIKE '%google%' ORDER BY EventTime",
			keys:    []KeyRef{{Col: -1, Hidden: 0}},
		},
		{
			q:     "SELECT URL, COUNT(*) AS PageViews FROM hits WHERE IsLink <> 0 GROUP BY URL ORDER BY PageViews DESC LIMIT 10 OFFSET 1000;",
			order: []string{"PageViews"}, limit: 10, offset: 1000,
			ordered: "SELECT URL, COUNT(*) AS PageViews FROM hits WHERE IsLink <> 0 GROUP BY URL ORDER BY PageViews DESC",
			keys:    []KeyRef{{Col: 1, Hidden: -1}},
		},
		{
			q:     "SELECT UserID, extract(minute FROM toDateTime(EventTime)) AS m, COUNT(*) FROM hits GROUP BY UserID, m ORDER BY 3 DESC NULLS FIRST, m ASC LIMIT 5",
			order: []string{"3", "m"}, limit: 5,
			ordered: "SELECT UserID, extract(minute FROM toDateTime(EventTime)) AS m, COUNT(*) FROM hits GROUP BY UserID, m ORDER BY 3 DESC NULLS FIRST, m ASC",
			keys:    []KeyRef{{Col: 2, Hidden: -1}, {Col: 1, Hidden: -1}},
		},
		{
			q: "SELECT 'a, ORDER BY x LIMIT 3' AS s, (SELECT 1 LIMIT 1) FROM t OFFSET 4 LIMIT 2", limit: 2, offset: 4,
			ordered: "SELECT 'a, ORDER BY x LIMIT 3' AS s, (SELECT 1 LIMIT 1) FROM t",
		},
		{
			q:     "SELECT DATE_TRUNC('minute', toDateTime(EventTime)) AS M, COUNT(*) AS PageViews FROM hits GROUP BY DATE_TRUNC('minute', toDateTime(EventTime)) ORDER BY DATE_TRUNC('minute', toDateTime(EventTime)) LIMIT 10 OFFSET 1000;",
			order: []string{"DATE_TRUNC('minute', toDateTime(EventTime))"}, limit: 10, offset: 1000,
			ordered: "SELECT DATE_TRUNC('minute', toDateTime(EventTime)) AS M, COUNT(*) AS PageViews, DATE_TRUNC('minute', toDateTime(EventTime)) AS __difftest_key0 FROM hits GROUP BY DATE_TRUNC('minute', toDateTime(EventTime)) ORDER BY DATE_TRUNC('minute', toDateTime(EventTime))",
			keys:    []KeyRef{{Col: -1, Hidden: 0}},
		},
	}
	for _, tt := range tests {
		s, err := ParseShape(tt.q)
		if err != nil {
			t.Errorf("ParseShape(%q): %v", tt.q, err)
			continue
		}
		if !reflect.DeepEqual(s.OrderBy, tt.order) || s.Limit != tt.limit || s.Offset != tt.offset {
			t.Errorf("ParseShape(%q) = order %q limit %d offset %d, want %q %d %d", tt.q, s.OrderBy, s.Limit, s.Offset,
				tt.order, tt.limit, tt.offset)
		}
		q, keys := s.OrderedQuery()
		if q != tt.ordered || !reflect.DeepEqual(keys, tt.keys) {
			t.Errorf("OrderedQuery(%q) =\n  %q %v\nwant\n  %q %v", tt.q, q, keys, tt.ordered, tt.keys)
		}
	}
	for _, bad := range []string{"", "UPDATE t SET x = 1", "SELECT (1", "SELECT 'x", "SELECT 1)", "SELECT a FROM t ORDER BY"} {
		if _, err := ParseShape(bad); err == nil {
			t.Errorf("ParseShape(%q): no error", bad)
		}
	}
}

func FuzzParseShape(f *testing.F) {
	for _, q := range []string{
		"SELECT COUNT(*) FROM hits;",
		"SELECT a, b AS c FROM t ORDER BY c DESC, 1 NULLS LAST LIMIT 10 OFFSET 5",
		"SELECT 'x''y' FROM \"t\" -- c\n ORDER BY (a, b) /* z */",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		s, err := ParseShape(q)
		if err != nil {
			return
		}
		body, keys := s.OrderedQuery()
		if len(keys) != len(s.OrderBy) {
			t.Fatalf("%d keys for %d ORDER BY items", len(keys), len(s.OrderBy))
		}
		if len(s.OrderBy) == 0 && body != s.Body {
			t.Fatalf("OrderedQuery changed a query without ORDER BY: %q", body)
		}
		if !strings.HasPrefix(s.Text, s.Body) {
			t.Fatalf("Body %q is not a prefix of Text %q", s.Body, s.Text)
		}
	})
}

func TestValueEqual(t *testing.T) {
	huge, _ := new(big.Int).SetString("170141183460469231731687303715884105727", 10)
	day := time.Date(2013, 7, 15, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{nil, int64(0), false},
		{Normalize(int16(-3)), Normalize(big.NewInt(-3)), true},
		{Normalize(uint64(1 << 63)), Normalize(new(big.Int).SetUint64(1 << 63)), true},
		{Normalize(uint64(1 << 63)), int64(-1 << 63), false},
		{Normalize(huge), Normalize(new(big.Int).Set(huge)), true},
		{Normalize(huge), int64(1), false},
		{1.0, 1.0 + 1e-12, true},
		{1.0, 1.0 + 1e-6, false},
		{1e300, 1e300 * (1 + 1e-10), true},
		{int64(3), 3.0, true},
		{"", nil, false},
		{"a", "a", true},
		{[]byte("ab"), "ab", false}, // not normalised: []byte is not a value kind
		{Normalize([]byte("ab")), "ab", true},
		{day, day.In(time.FixedZone("x", 3600)), true},
		{day, day.Add(time.Microsecond), false},
		{true, true, true},
		{true, int64(1), false},
	}
	for _, tt := range tests {
		if got := ValueEqual(tt.a, tt.b); got != tt.want {
			t.Errorf("ValueEqual(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func mkTable(kinds []Kind, rows ...[]any) *Table {
	t := &Table{Kinds: kinds}
	for i := range kinds {
		t.Columns = append(t.Columns, string(rune('a'+i)))
		t.Types = append(t.Types, kinds[i].String())
	}
	t.Rows = rows
	return t
}

func TestCompare(t *testing.T) {
	ik := []Kind{KindString, KindInteger}
	// Reference ordered by count DESC: ties at 5 (b, c, d) across the cut.
	full := mkTable(ik,
		[]any{"a", int64(9)}, []any{"b", int64(5)}, []any{"c", int64(5)}, []any{"d", int64(5)}, []any{"e", int64(1)})
	ordered := func(q string) *Reference {
		s, err := ParseShape(q)
		if err != nil {
			t.Fatal(err)
		}
		_, keys := s.OrderedQuery()
		ref, err := NewReference(s, full, keys)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	top3 := "SELECT k, c FROM t ORDER BY c DESC LIMIT 3"
	tests := []struct {
		name string
		q    string
		ours *Table
		ok   bool
	}{
		{"exact", top3, mkTable(ik, []any{"a", int64(9)}, []any{"b", int64(5)}, []any{"c", int64(5)}), true},
		{"other tie at cut", top3, mkTable(ik, []any{"a", int64(9)}, []any{"d", int64(5)}, []any{"b", int64(5)}), true},
		{"wrong order", top3, mkTable(ik, []any{"b", int64(5)}, []any{"a", int64(9)}, []any{"c", int64(5)}), false},
		{"duplicate tie row", top3, mkTable(ik, []any{"a", int64(9)}, []any{"b", int64(5)}, []any{"b", int64(5)}), false},
		{"wrong count", top3, mkTable(ik, []any{"a", int64(9)}, []any{"b", int64(4)}, []any{"c", int64(5)}), false},
		{"too few rows", top3, mkTable(ik, []any{"a", int64(9)}, []any{"b", int64(5)}), false},
		{"offset in ties", "SELECT k, c FROM t ORDER BY 2 DESC LIMIT 2 OFFSET 2",
			mkTable(ik, []any{"d", int64(5)}, []any{"b", int64(5)}), true},
		{"offset in ties, row after ties", "SELECT k, c FROM t ORDER BY 2 DESC LIMIT 2 OFFSET 2",
			mkTable(ik, []any{"b", int64(5)}, []any{"e", int64(1)}), false},
		{"offset beyond end", "SELECT k, c FROM t ORDER BY c LIMIT 2 OFFSET 7", mkTable(ik), true},
		{"offset beyond end, rows returned", "SELECT k, c FROM t ORDER BY c LIMIT 2 OFFSET 7",
			mkTable(ik, []any{"b", int64(5)}), false},
		{"unordered multiset", "SELECT k, c FROM t", mkTable(ik,
			[]any{"e", int64(1)}, []any{"d", int64(5)}, []any{"c", int64(5)}, []any{"b", int64(5)}, []any{"a", int64(9)}), true},
		{"unordered missing row", "SELECT k, c FROM t", mkTable(ik,
			[]any{"e", int64(1)}, []any{"d", int64(5)}, []any{"c", int64(5)}, []any{"b", int64(5)}, []any{"b", int64(5)}), false},
		{"unordered limit subset", "SELECT k, c FROM t LIMIT 2", mkTable(ik, []any{"e", int64(1)}, []any{"c", int64(5)}), true},
		{"unordered limit not subset", "SELECT k, c FROM t LIMIT 2", mkTable(ik, []any{"e", int64(1)}, []any{"z", int64(5)}), false},
		{"column count", top3, mkTable([]Kind{KindString}, []any{"a"}, []any{"b"}, []any{"c"}), false},
		{"null vs empty string", "SELECT k, c FROM t LIMIT 1", mkTable(ik, []any{nil, int64(1)}), false},
	}
	for _, tt := range tests {
		m := Compare(tt.ours, ordered(tt.q))
		if (m == nil) != tt.ok {
			t.Errorf("%s: Compare = %v, want ok=%v", tt.name, m, tt.ok)
		}
	}

	// Floats compare with tolerance, also when a float column decides
	// nothing about the bucket.
	fk := []Kind{KindInteger, KindFloat}
	fref := &Reference{Shape: &Shape{Limit: -1}, Full: mkTable(fk, []any{int64(1), 0.1 + 0.2}, []any{int64(2), 2.5}), NumOutput: 2}
	if m := Compare(mkTable(fk, []any{int64(2), 2.5}, []any{int64(1), 0.3}), fref); m != nil {
		t.Errorf("float tolerance: %v", m)
	}
	if m := Compare(mkTable(fk, []any{int64(2), 2.5}, []any{int64(1), 0.31}), fref); m == nil {
		t.Error("float 0.31 vs 0.3 compared equal")
	}
	// An integer result where DuckDB has a double: equal values pass (the
	// kind difference is reported by TypeNotes).
	if m := Compare(mkTable([]Kind{KindInteger, KindInteger}, []any{int64(2), int64(2)}, []any{int64(1), int64(3)}),
		&Reference{Shape: &Shape{Limit: -1}, Full: mkTable(fk, []any{int64(1), 3.0}, []any{int64(2), 2.0}), NumOutput: 2}); m != nil {
		t.Errorf("int vs integral double: %v", m)
	}
}

// TestHarnessSelfCheck runs the harness with DuckDB on both sides: DuckDB's
// answer to each query (with its LIMIT/OFFSET, under other thread counts)
// must pass Compare against the reference, and a perturbed answer must not.
// This checks the reference rewriting and the tie handling on real queries
// while our engine is still being built.
func TestHarnessSelfCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "hits.parquet")
	if err := gen.WriteFile(ctx, path, gen.Options{Rows: 30_000, Order: "shuffled", Seed: 2}); err != nil {
		t.Fatal(err)
	}
	ref, err := OpenDuck(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	other, err := OpenDuck(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := CreateHitsView(ctx, ref, "hits", path); err != nil {
		t.Fatal(err)
	}
	if err := CreateHitsView(ctx, other, "hits", path); err != nil {
		t.Fatal(err)
	}
	perturbed := 0
	for i, q := range readQueries(t) {
		s, err := ParseShape(q)
		if err != nil {
			t.Fatalf("Q%02d: %v", i, err)
		}
		full, keys := s.OrderedQuery()
		fullT, err := DuckQuery(ctx, ref, full)
		if err != nil {
			t.Fatalf("Q%02d reference %s: %v", i, full, err)
		}
		r, err := NewReference(s, fullT, keys)
		if err != nil {
			t.Fatalf("Q%02d: %v", i, err)
		}
		got, err := DuckQuery(ctx, other, q)
		if err != nil {
			t.Fatalf("Q%02d: %v", i, err)
		}
		if m := Compare(got, r); m != nil {
			t.Errorf("Q%02d: DuckDB disagrees with itself:\n%s\n%v", i, q, m)
		}
		// Change one value of the last column; the comparison must notice.
		if len(got.Rows) > 0 {
			row := got.Rows[len(got.Rows)-1]
			c := len(row) - 1
			switch v := row[c].(type) {
			case int64:
				row[c] = v + 1
			case float64:
				row[c] = v*1.01 + 1
			case string:
				row[c] = v + "x"
			default:
				continue
			}
			perturbed++
			if m := Compare(got, r); m == nil {
				t.Errorf("Q%02d: perturbed result passed Compare", i)
			}
		}
	}
	if perturbed < 30 {
		t.Errorf("only %d queries had rows to perturb", perturbed)
	}
}
