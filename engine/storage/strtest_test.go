package storage

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
)

// strCols holds string columns of every way a page reaches NextTest:
// PLAIN required (a plainPage), dictionary encoded required and
// optional (NULLs among the indexes), PLAIN optional (converted, then
// tested), and dictionary pages then PLAIN ones in one chunk, as a
// writer falls back when the dictionary outgrows its limit (Grow,
// OptGrow); empty strings in each, the dictionaries' included.
type strCols struct {
	Plain   string  `parquet:"Plain,plain"`
	Dict    string  `parquet:"Dict,dict"`
	OptDict *string `parquet:"OptDict,optional,dict"`
	OptStr  *string `parquet:"OptStr,optional"`
	Grow    string  `parquet:"Grow,dict"`
	OptGrow *string `parquet:"OptGrow,optional,dict"`
}

func strColsRow(i int) strCols {
	r := strCols{Dict: []string{"", "apple", "", "banana", "avocado"}[i%5]}
	if i%3 != 0 {
		r.Plain = strings.Repeat("a", i%7) + fmt.Sprint(i%11)
	}
	if i%4 != 1 {
		s := []string{"", "alpha", "beta"}[i%3]
		r.OptDict = &s
	}
	if i%5 != 2 {
		s := ""
		if i%2 == 0 {
			s = fmt.Sprintf("a%d", i)
		}
		r.OptStr = &s
	}
	// The first rows of each row group from a few values; then a new
	// value every other row, past the dictionary's limit.
	if k := i % 1000; k < 200 {
		r.Grow = []string{"", "ab", "b"}[k%3]
	} else if k%2 == 1 {
		r.Grow = fmt.Sprintf("a-%d", i)
	}
	if i%6 != 5 {
		s := r.Grow
		r.OptGrow = &s
	}
	return r
}

// TestNextTest reads every string column with NextTest under tests of
// each kind, in uneven steps with skips between them (steps start and
// end inside pages), from the file and from a chunk in memory, and
// compares the rows and strings with whole-chunk decoding filtered.
func TestNextTest(t *testing.T) {
	const n = 3000
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[strCols](&buf, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(1000), parquet.PageBufferSize(1024), parquet.DictionaryMaxBytes(256))
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
	tb, all, rd := wholeAndReader(t, memCatalog(t, "t", buf.Bytes(), 0), "t")
	ctx := context.Background()

	pred := func(f func(s string, null bool) bool) func(v *vec.Vector) ([]int32, error) {
		return func(v *vec.Vector) ([]int32, error) {
			var sel []int32
			for i := range v.Len {
				if f(string(v.Str(i)), v.IsNull(i)) {
					sel = append(sel, int32(i))
				}
			}
			return sel, nil
		}
	}
	tests := []struct {
		name  string
		empty EmptyTest
		f     func(s string, null bool) bool
	}{
		{"non-empty", NonEmpty, func(s string, null bool) bool { return !null && s != "" }},
		{"empty", EmptyOnly, func(s string, null bool) bool { return !null && s == "" }},
		{"prefix a", EmptyAny, func(s string, null bool) bool { return !null && strings.HasPrefix(s, "a") }},
		{"is null", EmptyAny, func(s string, null bool) bool { return null }},
		{"all", EmptyAny, func(s string, null bool) bool { return true }},
		{"none", EmptyAny, func(s string, null bool) bool { return false }},
		{"contains 1", EmptyAny, func(s string, null bool) bool { return !null && strings.Contains(s, "1") }},
		{"= ab", EmptyAny, func(s string, null bool) bool { return !null && s == "ab" }},
		// Searched for as one buffer (StringTest.Contains): a literal
		// that also spans two strings and their lengths ("0a", "-1").
		{"contains -1", EmptyAny, func(s string, null bool) bool { return !null && strings.Contains(s, "-1") }},
		{"contains 0a", EmptyAny, func(s string, null bool) bool { return !null && strings.Contains(s, "0a") }},
		{"not contains a", EmptyAny, func(s string, null bool) bool { return !null && !strings.Contains(s, "a") }},
		{"contains aaaa1", EmptyAny, func(s string, null bool) bool { return !null && strings.Contains(s, "aaaa1") }},
	}
	for _, tc := range tests {
		for g, b := range all {
			for j, col := range tb.Columns {
				// recycle: each vector is given back spoiled, so that
				// the next step converts into its arrays.
				for _, mode := range []struct{ whole, lengths, match, recycle bool }{
					{false, false, false, false}, {true, false, false, false}, {false, true, false, false}, {true, true, false, false},
					{false, false, true, false}, {false, true, true, false},
					{false, false, false, true}, {false, true, false, true}, {false, true, true, true},
				} {
					whole := mode.whole
					st, err := rd.Stream(ctx, g, j)
					if err != nil {
						t.Fatal(err)
					}
					if whole {
						st = StreamOf(b.Vecs[j])
					}
					test := &StringTest{Values: pred(tc.f), Empty: tc.empty, Lengths: mode.lengths}
					if mode.match {
						if tc.empty != EmptyAny || tc.f("", true) {
							continue // Match is for tests NULL fails
						}
						f := tc.f
						test.Match = func(b []byte) bool { return f(string(b), false) }
						if lit, ok := strings.CutPrefix(tc.name, "contains "); ok {
							test.Contains = []byte(lit)
						} else if lit, ok := strings.CutPrefix(tc.name, "not contains "); ok {
							test.Contains, test.NotContains = []byte(lit), true
						}
					}
					pos := 0
					for i, step := 0, 1; pos < b.Len; i, step = i+1, step*3+2 {
						if i%3 == 2 {
							if err := st.Skip(ctx, step); err != nil {
								t.Fatal(err)
							}
							pos += step
							continue
						}
						v, sel, err := st.NextTest(ctx, step, test)
						if err != nil {
							t.Fatalf("%s %s row group %d: %v", tc.name, col.Name, g, err)
						}
						var want []int32
						for i := pos; i < min(pos+step, b.Len); i++ {
							if tc.f(string(b.Vecs[j].Str(i)), b.Vecs[j].IsNull(i)) {
								want = append(want, int32(i-pos))
							}
						}
						if fmt.Sprint(sel) != fmt.Sprint(want) || v.Len != len(want) {
							t.Fatalf("%s %s row group %d rows from %d (whole %v): rows %v (%d values), want %v", tc.name, col.Name, g, pos, whole, sel, v.Len, want)
						}
						for i, r := range want {
							w := b.Vecs[j].Slice(pos+int(r), pos+int(r)+1)
							if mode.lengths {
								w = ByteLengths(w)
							}
							if got, want := v.Format(i), w.Format(0); got != want || v.Type != w.Type {
								t.Fatalf("%s %s row %d (%+v): %s %s, want %s %s", tc.name, col.Name, pos+int(r), mode, v.Type, got, w.Type, want)
							}
						}
						if mode.recycle {
							for i := range v.I64[:cap(v.I64)] {
								v.I64[:cap(v.I64)][i] = -0x5eed
							}
							for i := range v.Bytes[:cap(v.Bytes)] {
								v.Bytes[:cap(v.Bytes)][i] = '~'
							}
							st.Recycle(v)
						}
						pos += step
					}
					st.Close()
					if whole || mode.lengths || mode.recycle {
						continue
					}
					dict := strings.Contains(col.Name, "Dict") || strings.Contains(col.Name, "Grow")
					if got := test.DictRows.Load() > 0; got != dict {
						t.Errorf("%s %s: rows tested on the dictionary: %v, want %v", tc.name, col.Name, got, dict)
					}
					lengths := (col.Name == "Plain" || col.Name == "Grow") && tc.empty != EmptyAny
					if got := test.LengthRows.Load() > 0; got != lengths {
						t.Errorf("%s %s: rows tested on their lengths: %v, want %v", tc.name, col.Name, got, lengths)
					}
					inPage := (col.Name == "Plain" || col.Name == "Grow") && !lengths && mode.match
					if got := test.MatchRows.Load() > 0; got != inPage {
						t.Errorf("%s %s: rows tested in the page: %v, want %v", tc.name, col.Name, got, inPage)
					}
					values := col.Name == "OptStr" || col.Name == "OptGrow" || (col.Name == "Plain" || col.Name == "Grow") && !lengths && !inPage
					if got := test.ValueRows.Load() > 0; got != values {
						t.Errorf("%s %s: rows tested on their values: %v, want %v", tc.name, col.Name, got, values)
					}
				}
			}
		}
	}
}

// TestNextTestError passes on the error of the test.
func TestNextTestError(t *testing.T) {
	data := writeAllTypes(t, 1000)
	c := memCatalog(t, "t", data, 0)
	tb, _ := c.Table("t", false)
	rd, err := c.Open(tb)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, name := range []string{"Str", "DictStr", "OptStr", "OptDict"} {
		j := -1
		for k, col := range tb.Columns {
			if col.Name == name {
				j = k
			}
		}
		st, err := rd.Stream(context.Background(), 0, j)
		if err != nil {
			t.Fatal(err)
		}
		boom := fmt.Errorf("boom")
		test := &StringTest{Values: func(*vec.Vector) ([]int32, error) { return nil, boom }}
		if _, _, err := st.NextTest(context.Background(), 100, test); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("%s: %v, want the test's error", name, err)
		}
		st.Close()
	}
}
