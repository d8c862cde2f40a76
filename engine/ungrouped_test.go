package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"cachebook/engine/agg"
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

// TestNaiveThreads checks that a GROUP BY auto runs naive reads its input
// on every thread, a table per worker merged at the end, with the groups
// of one thread (every aggregate, DISTINCT ones included), and that SET
// group_by = 'naive' stays on one thread.
func TestNaiveThreads(t *testing.T) {
	const q = "SELECT k, g, count(*), count(v), sum(v), avg(v), min(s), max(s), sum(f), count(DISTINCT s), count(DISTINCT v), sum(DISTINCT neg) FROM t WHERE k <> 3 GROUP BY k, g ORDER BY k, g"
	for _, tc := range []struct {
		name      string
		set       []string
		want, not []string
	}{
		{"auto", []string{"threads=2"}, []string{"each of the 2 threads folds its share of the rows into a table of its own, merged at the end", "phase merge", "worker 2 aggregate"}, nil},
		{"naive", []string{"threads=2", "group_by=naive"}, []string{"strategy: naive: SET group_by = 'naive'"}, []string{"phase merge", "worker 2 aggregate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testDB(t).NewSession()
			for _, kv := range tc.set {
				k, v, _ := strings.Cut(kv, "=")
				if err := s.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			plan := runSQL(t, s, "EXPLAIN ANALYZE "+q)
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
			got := runSQL(t, s, q)
			if err := s.Set("threads", "1"); err != nil {
				t.Fatal(err)
			}
			if want := runSQL(t, s, q); got != want {
				t.Errorf("2 threads: %s\none thread: %s", got, want)
			}
		})
	}
}

// TestNaiveOutputBatches checks that EXPLAIN ANALYZE says when naive hands
// its groups on in several batches, and not when it hands on one, and
// that the top-N over them holds about one batch.
func TestNaiveOutputBatches(t *testing.T) {
	dir := t.TempDir()
	rows := make([]row, agg.PartGroups+5000)
	for i := range rows {
		rows[i] = row{K: int64(i), G: fmt.Sprintf("g%d", i)}
	}
	writeParquet(t, filepath.Join(dir, "t.parquet"), rows)
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, want string
	}{
		{"SELECT g, count(*) FROM t GROUP BY g ORDER BY 2 DESC, 1 LIMIT 3", "output: 2 batches of up to 65536 groups, handed on one at a time"},
		{"SELECT k, count(*) FROM t GROUP BY k ORDER BY 2 DESC, 1 LIMIT 3", "output: 2 batches of up to 65536 groups, handed on one at a time"},
		{"SELECT k % 10, count(*) FROM t GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3", ""},
	} {
		s := db.NewSession()
		if err := s.Set("group_by", "naive"); err != nil {
			t.Fatal(err)
		}
		plan := runSQL(t, s, "EXPLAIN ANALYZE "+tc.query)
		if tc.want == "" && strings.Contains(plan, "output:") || tc.want != "" && !strings.Contains(plan, tc.want) {
			t.Errorf("%s: want %q in:\n%s", tc.query, tc.want, strings.ReplaceAll(plan, ";", "\n"))
		}
	}
}
