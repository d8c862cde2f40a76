package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestTopNBound: a top-N over a table scan ordered by one of the table's
// columns, whose scan drops the rows sorting after the top-N's current
// n-th key before it decodes the other columns, returns exactly rows
// [offset, offset+n) of the same query without LIMIT (a full sort, which
// hands the scan no bound): with and without WHERE, ascending and
// descending, NULLs first and last, ties on the key (broken as the full
// sort breaks them), integer, timestamp, float and string keys, a second
// key, OFFSET, and WHERE clauses that pass none, few or most rows. Run on
// a catalog that keeps the columns (row groups decoded whole, the other
// columns read page by page) and on one too small to keep them (every
// column streamed a morsel at a time), at one and two threads.
func TestTopNBound(t *testing.T) {
	dir := t.TempDir()
	lookupTable(t, dir)
	const cols = "SELECT s, f, opt, ts, id, key FROM lk"
	orders := []string{
		"ts DESC", "id", "f", "s DESC", "opt", "opt DESC", "opt NULLS FIRST",
		"opt DESC NULLS FIRST", "opt, id DESC", "key", "key DESC", "key DESC, s",
	}
	wheres := []string{"", " WHERE key < 0", " WHERE id % 7 = 3", " WHERE key = 5", " WHERE opt IS NULL", " WHERE s LIKE '%xxxxx%'"}
	limits := []struct{ n, off int }{{10, 0}, {3, 2}, {50, 400}, {300, 0}}
	n := 0
	for _, run := range []struct {
		cache   int64
		threads string
	}{{0, "1"}, {1, "2"}} {
		db, err := Open(Options{DataDir: dir, CacheBytes: run.cache})
		if err != nil {
			t.Fatal(err)
		}
		// session returns a session of db, or, where the cache keeps
		// nothing, of a fresh catalog: a first read streams the columns
		// a morsel at a time (a second one decodes them whole).
		session := func() *Session {
			d := db
			if run.cache > 0 {
				if d, err = Open(Options{DataDir: dir, CacheBytes: run.cache}); err != nil {
					t.Fatal(err)
				}
			}
			s := d.NewSession()
			if err := s.Set("threads", run.threads); err != nil {
				t.Fatal(err)
			}
			return s
		}
		for i, where := range wheres {
			if raceSlowdown > 1 && i%2 == 1 {
				continue
			}
			for _, order := range orders {
				all := splitOrdered(runSQL(t, session(), cols+where+" ORDER BY "+order))
				for _, l := range limits {
					if raceSlowdown > 1 && l.n != 10 {
						continue
					}
					q := fmt.Sprintf("%s%s ORDER BY %s LIMIT %d OFFSET %d", cols, where, order, l.n, l.off)
					want := strings.Join(all[min(l.off, len(all)):min(l.off+l.n, len(all))], ";")
					n++
					if got := runSQL(t, session(), q); got != want {
						t.Errorf("cache %d, threads %s: %s\n got  %.300q\n want %.300q", run.cache, run.threads, q, got, want)
					}
				}
			}
		}
		// The bound was used, and dropped rows: the test above would
		// not fail if the scan ignored it.
		got := runSQL(t, session(), "EXPLAIN ANALYZE "+cols+" WHERE id % 7 = 3 ORDER BY ts DESC LIMIT 10")
		if !strings.Contains(got, "top-N late materialisation: ts decoded first") || !strings.Contains(got, "rows dropped") {
			t.Errorf("cache %d: EXPLAIN ANALYZE shows no rows dropped by the bound:\n%s", run.cache, strings.ReplaceAll(got, ";", "\n"))
		}
		if streamed := strings.Contains(got, "page by page"); streamed != (run.cache > 0) {
			t.Errorf("cache %d: EXPLAIN ANALYZE says the columns were streamed: %v\n%s", run.cache, streamed, strings.ReplaceAll(got, ";", "\n"))
		}
		if parallel := strings.Contains(got, "input: 2 workers"); parallel != (run.threads == "2") {
			t.Errorf("threads %s: EXPLAIN ANALYZE says the top-N's input is parallel: %v\n%s", run.threads, parallel, strings.ReplaceAll(got, ";", "\n"))
		}
	}
	t.Logf("%d queries", n)
	// No bound where the first key is not a column of the table, or an
	// aggregation comes between.
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"EXPLAIN SELECT id FROM lk ORDER BY id + 1 LIMIT 3",
		"EXPLAIN SELECT key, count(*) FROM lk GROUP BY key ORDER BY key LIMIT 3",
		"EXPLAIN SELECT id FROM lk ORDER BY id",
	} {
		if got := runSQL(t, db.NewSession(), q); strings.Contains(got, "top-N late materialisation") {
			t.Errorf("%s: a bound where none applies:\n%s", q, strings.ReplaceAll(got, ";", "\n"))
		}
	}
}

// splitOrdered splits rowsString's rendering into its rows, in order.
func splitOrdered(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ";")
}
