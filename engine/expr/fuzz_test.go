package expr

import (
	"testing"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// FuzzBindEval binds and evaluates arbitrary expressions over the test
// batch: neither may panic, errors from binding must carry a position inside
// the input, and results must have one value per row.
func FuzzBindEval(f *testing.F) {
	for _, s := range []string{
		"i + 1", "s LIKE '%a_b%'", "CASE WHEN b THEN f ELSE i END", "i IN (1, NULL, 3)",
		"date_trunc('minute', toDateTime(sec))", "extract(dow FROM d)", "regexp_replace(s, '(a)', '\\1', 'g')",
		"substr(s, -2, 3)", "coalesce(i, j, f)", "nullif(s, '')", "CAST(s AS DATE)", "u > i", "ts - ts",
		"d + INTERVAL 1 DAY", "i // j % 2", "NOT b OR NULL", "s || i || f",
	} {
		f.Add(s)
	}
	cols, b := testBatch(f)
	f.Fuzz(func(t *testing.T, src string) {
		ast, err := sql.ParseExpr(src)
		if err != nil {
			return
		}
		e, err := (&Binder{Columns: cols}).Bind(ast)
		if err != nil {
			if se, ok := err.(*sql.Error); ok && (se.Pos.Offset < 0 || se.Pos.Offset > len(src)) {
				t.Fatalf("error %v at offset %d outside %q", err, se.Pos.Offset, src)
			}
			return
		}
		_ = e.String()
		v, err := e.Eval(b)
		if err != nil {
			return
		}
		if v.Len != b.Len || v.Type != e.Type() {
			t.Fatalf("%s: %d values of %s, want %d of %s", src, v.Len, v.Type, b.Len, e.Type())
		}
		if v.Type == vec.String && len(v.Offsets) != v.Len+1 {
			t.Fatalf("%s: bad offsets", src)
		}
		for i := 0; i < v.Len; i++ {
			_ = v.Format(i)
		}
	})
}

// FuzzParseDateTime feeds arbitrary text to the DATE and TIMESTAMP value
// parsers: they must not panic, and a value they accept must print (as
// DuckDB prints it) to text that parses back to the same value.
func FuzzParseDateTime(f *testing.F) {
	for _, s := range []string{"2013-07-15", " 1969-12-31 ", "2013-07-15 12:34:56.789", "2013-07-15T01:02",
		"0001-01-01", "9999-12-31 23:59:59.999999", "2013-13-01", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDate(s); err == nil {
			v := &vec.Vector{Type: vec.Date, Len: 1, I64: []int64{d}}
			if d2, err := ParseDate(v.Format(0)); err != nil || d2 != d {
				t.Fatalf("%q → %d prints %q, which parses to %d, %v", s, d, v.Format(0), d2, err)
			}
		}
		if ts, err := ParseTimestamp(s); err == nil {
			v := castToString(&vec.Vector{Type: vec.Timestamp, Len: 1, I64: []int64{ts}})
			if ts2, err := ParseTimestamp(v.Format(0)); err != nil || ts2 != ts {
				t.Fatalf("%q → %d prints %q, which parses to %d, %v", s, ts, v.Format(0), ts2, err)
			}
		}
	})
}
