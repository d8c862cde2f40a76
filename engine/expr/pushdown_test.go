package expr

import (
	"strings"
	"testing"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

func bindTest(t *testing.T, cols []vec.Column, src string) Expr {
	t.Helper()
	ast, err := sql.ParseExpr(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	e, err := (&Binder{Columns: cols}).Bind(ast)
	if err != nil {
		t.Fatalf("bind %q: %v", src, err)
	}
	return e
}

// TestStringColumnTest: the conjuncts a scan may evaluate on a
// dictionary are tests of one string column against constants alone.
func TestStringColumnTest(t *testing.T) {
	cols, _ := testBatch(t)
	const s, pat = 3, 10 // the string columns of testBatch
	for _, tc := range []struct {
		src      string
		col      int
		ok       bool
		empty    bool // a comparison with the empty string
		nonEmpty bool
	}{
		{"s <> ''", s, true, true, true},
		{"'' = s", s, true, true, false},
		{"s = 'x'", s, true, false, false},
		{"s < ''", s, true, false, false},
		{"s IN ('a', 'b')", s, true, false, false},
		{"s NOT LIKE '%x%'", s, true, false, false},
		{"s IS NULL", s, true, false, false},
		{"pat IS NOT NULL", pat, true, false, false},
		{"s ILIKE 'x%'", 0, false, false, false},
		{"s = pat", 0, false, false, false},
		{"s LIKE pat", 0, false, false, false},
		{"lower(s) = 'x'", 0, false, false, false},
		{"CAST(s AS INTEGER) = 3", 0, false, false, false}, // may fail on a value
		{"i = 3", 0, false, false, false},
		{"s = NULL", 0, false, false, false},
	} {
		e := bindTest(t, cols, tc.src)
		col, ok := StringColumnTest(e)
		if ok != tc.ok || ok && col != tc.col {
			t.Errorf("StringColumnTest(%s) = %d, %v; want %d, %v", tc.src, col, ok, tc.col, tc.ok)
		}
		col, nonEmpty, ok := EmptyStringTest(e)
		if ok != tc.empty || ok && (col != tc.col || nonEmpty != tc.nonEmpty) {
			t.Errorf("EmptyStringTest(%s) = %d, %v, %v; want %d, %v, %v", tc.src, col, nonEmpty, ok, tc.col, tc.nonEmpty, tc.empty)
		}
	}
}

// TestByteLengths: a column read only as strlen(col) may be handed over
// as its byte lengths, and the rewritten expressions evaluate to what
// they did over the strings.
func TestByteLengths(t *testing.T) {
	cols, b := testBatch(t)
	const s = 3
	for _, tc := range []struct {
		srcs []string
		ok   bool
	}{
		{[]string{"strlen(s)"}, true},
		{[]string{"strlen(s) + 1", "octet_length(s) * 2", "i"}, true},
		{[]string{"STRLEN(s) > 3"}, true},
		{[]string{"strlen(s)", "s"}, false},
		{[]string{"length(s)"}, false},
		{[]string{"strlen(lower(s))"}, false},
		{[]string{"strlen(s) + strlen(pat)", "s = 'x'"}, false},
		{[]string{"i + 1"}, false}, // s not read at all
	} {
		var es []Expr
		for _, src := range tc.srcs {
			es = append(es, bindTest(t, cols, src))
		}
		if got := ByteLengthsOnly(es, s); got != tc.ok {
			t.Errorf("ByteLengthsOnly(%q) = %v, want %v", tc.srcs, got, tc.ok)
		}
		if !tc.ok {
			continue
		}
		var want []string
		for _, e := range es {
			v, err := e.Eval(b)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, formatAll(v))
		}
		for _, e := range es {
			UseByteLengths(e, s)
		}
		if !ByteLengthsOnly(es, s) {
			t.Errorf("%q: not lengths only once rewritten", tc.srcs)
		}
		lb := &vec.Batch{Vecs: append([]*vec.Vector(nil), b.Vecs...), Len: b.Len}
		sv := b.Vecs[s]
		lv := &vec.Vector{Type: vec.Int64, Len: sv.Len, I64: make([]int64, sv.Len), Valid: sv.Valid}
		for i := range lv.I64 {
			lv.I64[i] = int64(len(sv.Str(i)))
		}
		lb.Vecs[s] = lv
		for i, e := range es {
			v, err := e.Eval(lb)
			if err != nil {
				t.Fatalf("%s: %v", e, err)
			}
			if got := formatAll(v); got != want[i] {
				t.Errorf("%s over the lengths: %s, want %s", e, got, want[i])
			}
		}
	}
}

// matcherAgrees reports whether StringMatcher of the conjunction src, a
// test of the string column s, agrees with the filter over each value
// of vals (none NULL), and fails the test where it cannot build one.
func matcherAgrees(t testing.TB, src string, vals []string) (bad string, ok bool) {
	cols := []vec.Column{{Name: "s", Type: vec.String}}
	ast, err := sql.ParseExpr(src)
	if err != nil {
		return "", true // not SQL: nothing to compare
	}
	e, err := (&Binder{Columns: cols}).Bind(ast)
	if err != nil {
		return "", true
	}
	terms := Conjuncts(e)
	for _, c := range terms {
		if _, ok := StringColumnTest(c); !ok {
			return "", true
		}
	}
	m, ok := StringMatcher(terms)
	if !ok {
		t.Fatalf("StringMatcher(%s): none", src)
	}
	v := vec.NewVector(vec.String, len(vals))
	for _, s := range vals {
		v.AppendStr([]byte(s))
	}
	sel, err := NewFilterOf(terms).Select(&vec.Batch{Vecs: []*vec.Vector{v}, Len: v.Len}, &FilterScratch{})
	if err != nil {
		return "", true
	}
	pass := make([]bool, len(vals))
	for _, r := range sel {
		pass[r] = true
	}
	for i, s := range vals {
		if m([]byte(s)) != pass[i] {
			return s, false
		}
	}
	return "", true
}

// TestStringMatcher: the test of one string a reader applies where the
// string lies in a page passes exactly the values the filter passes, for
// every kind of conjunct a string column is tested with.
func TestStringMatcher(t *testing.T) {
	vals := []string{"", "a", "ab", "abc", "b", "google", "www.google.com", "Google", "x%y", "x_y", "xay",
		"héllo", "h_llo", "%", "_", "ba", "aab", "abab", "googl", ".google."}
	for _, src := range []string{
		"s LIKE '%google%'", "s NOT LIKE '%.google.%'", "s LIKE 'a%'", "s LIKE '%b'", "s LIKE 'ab'",
		"s LIKE '_'", "s LIKE 'h_llo'", "s LIKE 'a%b'", "s LIKE '%a%b%'", "s LIKE 'a%b%c'", "s LIKE '%'",
		"s LIKE ''", "s NOT LIKE '%'", "s LIKE '%%'", "s LIKE 'x\\%y'", "s LIKE '__'", "s NOT LIKE '_%'",
		"s = 'ab'", "s <> 'ab'", "s = ''", "s <> ''", "s < 'b'", "s >= 'ab'", "s > ''", "s <= 'google'",
		"s IN ('a', 'ab', '')", "s NOT IN ('a', 'b')", "s IN ('a', NULL)", "s NOT IN ('a', NULL)",
		"s IS NULL", "s IS NOT NULL",
		"s LIKE '%o%' AND s <> 'google' AND s NOT LIKE '%.%'", "s >= 'a' AND s < 'b'",
	} {
		if bad, ok := matcherAgrees(t, src, vals); !ok {
			t.Errorf("StringMatcher(%s) disagrees with the filter on %q", src, bad)
		}
	}
	cols := []vec.Column{{Name: "s", Type: vec.String}, {Name: "i", Type: vec.Int64}}
	for _, src := range []string{"s ILIKE 'x%'", "lower(s) = 'x'", "i = 3", "s || 'x' = 'ax'"} {
		if _, ok := StringMatcher(Conjuncts(bindTest(t, cols, src))); ok {
			t.Errorf("StringMatcher(%s): a matcher, want none", src)
		}
	}
}

// FuzzStringMatcher: for any LIKE pattern and string, the matcher and
// the filter agree.
func FuzzStringMatcher(f *testing.F) {
	for _, s := range [][2]string{{"%google%", "www.google.com"}, {"a_c", "abc"}, {"%a%b", "xab"}, {"é_", "éé"}, {"%", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, s string) {
		lit := "'" + strings.ReplaceAll(pat, "'", "''") + "'"
		for _, src := range []string{"s LIKE " + lit, "s NOT LIKE " + lit, "s < " + lit, "s IN (" + lit + ", 'a')"} {
			if bad, ok := matcherAgrees(t, src, []string{s, pat, ""}); !ok {
				t.Fatalf("StringMatcher(%s) disagrees with the filter on %q", src, bad)
			}
		}
	})
}
