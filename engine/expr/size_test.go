package expr

import (
	"strings"
	"testing"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// TestBuildSizeBounds: for each expression, the bytes of strings its nodes
// actually build, summed over every string node, never pass BuildSize's
// bound, row by row and over the whole batch; and a bound that should be
// tight (a regexp_replace that repeats its whole input) is within a few
// bytes per row.
func TestBuildSizeBounds(t *testing.T) {
	cols, b := testBatch(t)
	bad := []byte{0xff, 0xfe, 'a', 0xc3} // invalid UTF-8: upper makes U+FFFD of each byte
	extra := vec.NewVector(vec.String, b.Len)
	for i := range b.Len {
		extra.AppendStr(append([]byte(strings.Repeat("ıȿ", i)), bad...))
	}
	cols = append(cols, vec.Column{Name: "x", Type: vec.String})
	b.Vecs = append(b.Vecs, extra)
	tests := []struct {
		src   string
		tight bool
	}{
		{`regexp_replace(s, '^(.*)$', '\1\1')`, true},
		{`regexp_replace(regexp_replace(s, '^(.*)$', '\1\1\1'), '^(.*)$', '\1\1')`, true},
		{`regexp_replace(s, '', '<>', 'g')`, false},
		{`regexp_replace(s, '(l*)', '[\1\0]', 'g')`, false},
		{`regexp_replace(x, '.', '\0\0', 'g')`, false},
		{`upper(x)`, false},
		{`lower(upper(x))`, false},
		{`concat(s, x, s, 'abc')`, false},
		{`s || x || s`, false},
		{`substr(x, 2, 3)`, false},
		{`CAST(f AS VARCHAR) || CAST(ts AS VARCHAR) || CAST(u AS VARCHAR)`, false},
		{`CASE WHEN i > 0 THEN s ELSE x || x END`, false},
		{`coalesce(s, x, 'none')`, false},
		{`nullif(s, 'Hello')`, false},
		{`length(regexp_replace(x, '^(.*)$', '\1\1\1\1'))`, false},
		{`regexp_replace(s, '^(.*)$', '\1\1') LIKE '%l%'`, false},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			pe, err := sql.ParseExpr(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			e, err := (&Binder{Columns: cols}).Bind(pe)
			if err != nil {
				t.Fatal(err)
			}
			size, ok := BuildSize(e)
			if !ok {
				t.Fatalf("%s: no bound", e)
			}
			for lo := 0; lo <= b.Len; lo++ {
				for hi := lo; hi <= b.Len; hi++ {
					slice := &vec.Batch{Len: hi - lo}
					for _, v := range b.Vecs {
						slice.Vecs = append(slice.Vecs, v.Slice(lo, hi))
					}
					got := builtBytes(t, e, slice)
					bound := size.Rows(b, lo, hi)
					if got > bound {
						t.Errorf("rows [%d, %d): built %d bytes, bound %d", lo, hi, got, bound)
					}
					if tc.tight && hi == lo+1 && bound > got+2*rowOverhead+8 {
						t.Errorf("row %d: built %d bytes, bound %d: not tight", lo, got, bound)
					}
				}
			}
		})
	}
}

// builtBytes evaluates every string node of e below and at its root that
// is not a column reference over b and sums its result's bytes and rows'
// overhead.
func builtBytes(t *testing.T, e Expr, b *vec.Batch) int64 {
	var n int64
	Walk(e, func(s Expr) bool {
		if _, ref := s.(*ColumnRef); ref || s.Type() != vec.String {
			return true
		}
		v, err := s.Eval(b)
		if err != nil {
			t.Fatal(err)
		}
		if v.Len > 0 {
			n += int64(v.Offsets[v.Len] - v.Offsets[0])
		}
		return true
	})
	return n
}

// TestBuildSizeSaturates: thirty nested doublings bound a row at 2^31
// times its bytes, without overflow, and sixty saturate.
func TestBuildSizeSaturates(t *testing.T) {
	cols, b := testBatch(t)
	x := "s"
	for range 60 {
		x = `regexp_replace(` + x + `, '^(.*)$', '\1\1')`
	}
	pe, err := sql.ParseExpr(x)
	if err != nil {
		t.Fatal(err)
	}
	e, err := (&Binder{Columns: cols}).Bind(pe)
	if err != nil {
		t.Fatal(err)
	}
	size, ok := BuildSize(e)
	if !ok {
		t.Fatal("no bound")
	}
	if got := size.Rows(b, 0, 1); got != maxSize {
		t.Errorf("bound of 60 doublings of %q: %d, want %d", b.Vecs[3].Str(0), got, int64(maxSize))
	}
	if got := size.Rows(b, 0, b.Len); got != maxSize {
		t.Errorf("bound over the batch %d, want %d", got, int64(maxSize))
	}
}

// TestFoldBounded: binding folds constant string expressions that build
// little and leaves one that would build more than foldMaxBytes to be
// evaluated under a statement's budget (thirty doublings of a 1 KB
// literal built a terabyte while binding).
func TestFoldBounded(t *testing.T) {
	k := "'" + strings.Repeat("a", 1000) + "'"
	for _, tc := range []struct {
		levels int
		folded bool
	}{{1, true}, {9, true}, {11, false}, {30, false}} {
		x := k
		for range tc.levels {
			x = `regexp_replace(` + x + `, '^(.*)$', '\1\1')`
		}
		pe, err := sql.ParseExpr(x)
		if err != nil {
			t.Fatal(err)
		}
		e, err := (&Binder{}).Bind(pe)
		if err != nil {
			t.Fatal(err)
		}
		if _, isConst := e.(*Const); isConst != tc.folded {
			t.Errorf("%d doublings: folded %v, want %v", tc.levels, isConst, tc.folded)
		}
		if f, err := Fold(e); err != nil || !tc.folded && f != e {
			t.Errorf("%d doublings: Fold gave %T, %v", tc.levels, f, err)
		}
	}
}
