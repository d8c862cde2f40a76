package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"cachebook/engine/vec"
)

// lookupRow is the schema of the lookup test table: a key whose matches
// the test places, and other columns of every kind a query selects.
type lookupRow struct {
	ID  int64     `parquet:"id"`
	Key int64     `parquet:"key"`
	S   string    `parquet:"s"`
	F   float64   `parquet:"f"`
	Opt *int64    `parquet:"opt,optional"`
	TS  time.Time `parquet:"ts,timestamp(microsecond)"`
}

const (
	lookupRows  = 100_000
	lookupGroup = 40_000 // rows per row group: three morsels and a part
)

// lookupKeys are keys placed on chosen rows of the lookup table (rows
// 0–39,999, 40,000–79,999 and 80,000–99,999 are its row groups, of morsels
// 0–16,383, 16,384–32,767, 32,768–39,999 and so on), in this order, a row
// taken by an earlier key staying with it. Every other row's key is its
// id, so a lookup of an id that no key here took matches that row once.
var lookupKeys = []struct {
	key  int64
	rows []int
}{
	{-1, []int{5, 30_000, 70_000}},                              // a few, in two row groups and three morsels
	{-2, stride(1_001, 601, 50)},                                // 50, in one row group, two morsels
	{-7, []int{16_383, 16_384, 39_999, 40_000, 99_998, 99_999}}, // the edges of morsels and row groups
	{-4, stride(41_000, 1, 4_000)},                              // below the selective cut (1 in 8), in one morsel
	{-5, stride(81_000, 1, 2_000)},                              // the same in the last, short, row group
	{-6, stride(57_000, 1, 7_000)},                              // above the cut, in one morsel of four
	{-3, stride(113, 222, 450)},                                 // hundreds, in every row group
}

func stride(from, step, n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = from + i*step
	}
	return r
}

// lookupTable writes the lookup table and returns the keys of its rows.
func lookupTable(t *testing.T, dir string) []int64 {
	t.Helper()
	keys := make([]int64, lookupRows)
	for i := range keys {
		keys[i] = int64(i)
	}
	taken := make([]bool, lookupRows)
	for _, lk := range lookupKeys {
		for _, r := range lk.rows {
			if !taken[r] {
				keys[r], taken[r] = lk.key, true
			}
		}
	}
	rows := make([]lookupRow, lookupRows)
	for i := range rows {
		rows[i] = lookupRow{
			ID:  int64(i),
			Key: keys[i],
			S:   fmt.Sprintf("s%d-%s", i, strings.Repeat("x", i%7)),
			F:   float64(i) / 8,
			TS:  time.Unix(1_372_636_800+int64(i)*61, 0).UTC(),
		}
		if i%3 != 0 {
			rows[i].Opt = ptr(int64(i % 1000))
		}
	}
	f, err := os.Create(filepath.Join(dir, "lk.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Small pages, so that the few-matches path skips pages and rows
	// within pages.
	w := parquet.NewGenericWriter[lookupRow](f, parquet.MaxRowsPerRowGroup(lookupGroup), parquet.PageBufferSize(4096))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestSelectiveLookups: a WHERE that keeps none, one, a few, fifty or
// hundreds of a row group's rows, with other columns selected (the scan
// reads them page by page, for the morsels with matches only), answers
// with exactly the matching rows, with and without ORDER BY and LIMIT,
// with every strategy at one and two threads. A morsel without a match
// inside such a row group used to come out as a batch of no columns:
// "column s: index 2 out of range for a batch of 0 columns".
func TestSelectiveLookups(t *testing.T) {
	dir := t.TempDir()
	keys := lookupTable(t, dir)
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// matching returns the ids of the rows whose key is k.
	matching := func(k int64) []int {
		var ids []int
		for i, key := range keys {
			if key == k {
				ids = append(ids, i)
			}
		}
		return ids
	}
	// render renders row i as "SELECT s, f, opt, ts, id" does.
	render := func(i int) string {
		opt := "NULL"
		if i%3 != 0 {
			opt = fmt.Sprint(i % 1000)
		}
		ts := time.Unix(1_372_636_800+int64(i)*61, 0).UTC().Format("2006-01-02 15:04:05")
		f := (&vec.Vector{Type: vec.Float64, Len: 1, F64: []float64{float64(i) / 8}}).Format(0)
		return fmt.Sprintf("s%d-%s,%s,%s,%s,%d", i, strings.Repeat("x", i%7), f, opt, ts, i)
	}
	join := func(ids []int) string {
		var rs []string
		for _, i := range ids {
			rs = append(rs, render(i))
		}
		return strings.Join(rs, ";")
	}
	type lookup struct {
		name  string
		where string
		ids   []int
	}
	lookups := []lookup{
		{"none", "key = 5", nil}, // row 5 took key -1: no row, though min/max keep every row group
		{"once, first row", "key = 0", []int{0}},
		{"once, second morsel", "key = 20000", []int{20_000}},
		{"once, short morsel", "key = 39000", []int{39_000}},
		{"once, last row group", "key = 99000", []int{99_000}},
	}
	for _, lk := range lookupKeys {
		ids := matching(lk.key)
		lookups = append(lookups, lookup{fmt.Sprintf("key %d (%d rows)", lk.key, len(ids)), fmt.Sprintf("key = %d", lk.key), ids})
	}
	lookups = append(lookups,
		lookup{"IN, several row groups", "key IN (3, 45000, 88888, -1)", append(append([]int{3}, matching(-1)...), 45_000, 88_888)},
		lookup{"on a selected column", "id = 77777 AND key = 77777", []int{77_777}},
	)
	slices.Sort(lookups[len(lookups)-2].ids)
	// A string conjunct beside the key's: the string column is read for
	// the rows the key passes only (scanOp.early), whether they are few
	// (-1, -3), below the selective cut (-4) or above it (-6).
	xx := func(ids []int) []int { // s LIKE '%-xx%': two x's at least
		var r []int
		for _, i := range ids {
			if i%7 >= 2 {
				r = append(r, i)
			}
		}
		return r
	}
	for _, k := range []int64{-1, -3, -4, -6, -7} {
		ids := matching(k)
		lookups = append(lookups,
			lookup{fmt.Sprintf("key %d, every s", k), fmt.Sprintf("key = %d AND s <> ''", k), ids},
			lookup{fmt.Sprintf("key %d, no s", k), fmt.Sprintf("s = 'none' AND key = %d", k), nil},
			lookup{fmt.Sprintf("key %d, some s", k), fmt.Sprintf("key = %d AND s LIKE '%%-xx%%'", k), xx(ids)},
		)
	}
	lookups = append(lookups, lookup{"once, on s and f", "s = 's20000-x' AND f < 2500.5 AND key = 20000", []int{20_000}})
	const cols = "SELECT s, f, opt, ts, id FROM lk WHERE "
	n := 0
	for _, strat := range []string{"naive", "radix", "parallel", "auto"} {
		for _, threads := range []string{"1", "2"} {
			if raceSlowdown > 1 && (threads == "1") != (strat == "naive") {
				continue // under the race detector: naive at 1 thread, the others at 2
			}
			s := db.NewSession()
			if err := s.Set("group_by", strat); err != nil {
				t.Fatal(err)
			}
			if err := s.Set("threads", threads); err != nil {
				t.Fatal(err)
			}
			for _, lk := range lookups {
				desc := slices.Clone(lk.ids)
				slices.Reverse(desc)
				for _, tc := range []sqlCase{
					{cols + lk.where + " ORDER BY id", join(lk.ids)},
					{cols + lk.where + " ORDER BY id DESC LIMIT 3", join(desc[:min(3, len(desc))])},
					{"SELECT count(*), min(s), max(ts) FROM lk WHERE " + lk.where, aggOf(lk.ids, render)},
				} {
					n++
					if got := runSQL(t, s, tc.sql); got != tc.want {
						t.Errorf("%s, threads %s, %s: %s\n got  %.300q\n want %.300q", strat, threads, lk.name, tc.sql, got, tc.want)
					}
				}
				// Without ORDER BY the rows come in any order; with a
				// LIMIT, any of the matching rows.
				n++
				got := runSQL(t, s, cols+lk.where)
				if rows := splitRows(got); !slices.Equal(rows, sortedRows(join(lk.ids))) {
					t.Errorf("%s, threads %s, %s: %s\n got  %.300q\n want %.300q", strat, threads, lk.name, cols+lk.where, got, join(lk.ids))
				}
				n++
				got = runSQL(t, s, cols+lk.where+" LIMIT 2")
				if rows := splitRows(got); len(rows) != min(2, len(lk.ids)) || !subset(rows, sortedRows(join(lk.ids))) {
					t.Errorf("%s, threads %s, %s: %s LIMIT 2\n got  %.300q", strat, threads, lk.name, cols+lk.where, got)
				}
			}
		}
	}
	t.Logf("%d lookups", n)
	// The lookups above took the few-matches path they are there for.
	got := runSQL(t, db.NewSession(), "EXPLAIN ANALYZE SELECT s, ts FROM lk WHERE key = -1 ORDER BY ts")
	if !strings.Contains(got, ", 2 with few matches") {
		t.Errorf("EXPLAIN ANALYZE does not show the few-matches path:\n%s", strings.ReplaceAll(got, ";", "\n"))
	}
	got = runSQL(t, db.NewSession(), "EXPLAIN ANALYZE SELECT ts FROM lk WHERE key = -3 AND s LIKE '%-xx%'")
	if !strings.Contains(got, ", 3 with few rows past the conjuncts without strings (s converted") {
		t.Errorf("EXPLAIN ANALYZE does not show the string column read late:\n%s", strings.ReplaceAll(got, ";", "\n"))
	}
}

// aggOf is count(*), min(s), max(ts) over the rows ids, as runSQL
// renders it.
func aggOf(ids []int, render func(int) string) string {
	if len(ids) == 0 {
		return "0,NULL,NULL"
	}
	var minS string
	for k, i := range ids {
		if s, _, _ := strings.Cut(render(i), ","); k == 0 || s < minS {
			minS = s
		}
	}
	last := strings.Split(render(slices.Max(ids)), ",")
	return fmt.Sprintf("%d,%s,%s", len(ids), minS, last[3])
}

// splitRows splits runSQL's rendering into sorted rows.
func splitRows(s string) []string {
	if s == "" {
		return nil
	}
	return sortedRows(s)
}

func sortedRows(s string) []string {
	if s == "" {
		return nil
	}
	rows := strings.Split(s, ";")
	slices.Sort(rows)
	return rows
}

// subset reports whether every row of a (sorted) occurs in b (sorted),
// as many times.
func subset(a, b []string) bool {
	j := 0
	for _, r := range a {
		for j < len(b) && b[j] < r {
			j++
		}
		if j == len(b) || b[j] != r {
			return false
		}
		j++
	}
	return true
}
