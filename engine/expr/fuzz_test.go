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
