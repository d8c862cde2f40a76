package engine

import (
	"strings"
	"testing"
)

// TestUngroupedThreads checks that an aggregate without keys over a table
// runs on every thread with the same result as on one (a DISTINCT one
// too, its sets merged), that it stays on one where its input is a
// subquery, and that
// EXPLAIN says that count(*) reads no values.
func TestUngroupedThreads(t *testing.T) {
	const q = "SELECT count(*), count(v), sum(v), avg(v), min(s), max(s), min(day), max(neg), sum(f) FROM t"
	for _, tc := range []struct {
		name, query string
		threads     string
		want, not   []string
	}{
		{"parallel", q, "2", []string{"on 2 threads, merged"}, []string{"count(*): added up"}},
		{"one thread", q, "1", []string{"global aggregate states (one group)"}, []string{"threads, merged"}},
		{"distinct", "SELECT sum(DISTINCT v), count(DISTINCT s), count(*) FROM t", "2", []string{"on 2 threads, merged"}, nil},
		{"subquery", "SELECT count(*) FROM (SELECT k FROM t LIMIT 500) AS x", "2", nil, []string{"threads, merged"}},
		{"count only", "SELECT count(*), count(*) FROM t", "2",
			[]string{"count(*): added up from the row counts of the input's batches, no values read", "row counts from the footer"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testDB(t).NewSession()
			if err := s.Set("threads", tc.threads); err != nil {
				t.Fatal(err)
			}
			plan := runSQL(t, s, "EXPLAIN ANALYZE "+tc.query)
			for _, w := range tc.want {
				if !strings.Contains(plan, w) {
					t.Errorf("no %q in:\n%s", w, strings.ReplaceAll(plan, ";", "\n"))
				}
			}
			for _, w := range tc.not {
				if strings.Contains(plan, w) {
					t.Errorf("%q in:\n%s", w, strings.ReplaceAll(plan, ";", "\n"))
				}
			}
			got := runSQL(t, s, tc.query)
			if err := s.Set("threads", "1"); err != nil {
				t.Fatal(err)
			}
			if want := runSQL(t, s, tc.query); got != want {
				t.Errorf("threads %s: %s, one thread: %s", tc.threads, got, want)
			}
		})
	}
}
