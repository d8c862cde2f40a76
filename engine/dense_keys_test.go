package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestDenseKeys: a two-step DISTINCT aggregation with a string key groups
// dense ids of its keys (EXPLAIN shows DENSE_KEYS) and gives the rows it
// gives grouping the keys themselves; keys without a string keep them.
func TestDenseKeys(t *testing.T) {
	db := distinctDB(t)
	for _, tc := range []struct {
		q     string
		dense bool
	}{
		// A string key with NULLs; x with NULLs; x a string.
		{"SELECT ks, count(DISTINCT x32) FROM d GROUP BY ks", true},
		{"SELECT ks, count(DISTINCT xs), sum(DISTINCT x16), avg(DISTINCT x16) FROM d GROUP BY ks", false}, // two arguments
		{"SELECT ks, count(DISTINCT xs) FROM d GROUP BY ks", true},
		{"SELECT ks, count(DISTINCT x64), sum(DISTINCT x64), avg(DISTINCT x64) FROM d GROUP BY ks", true},
		// Two keys, one an integer with NULLs (ClickBench Q11's shape);
		// x among the keys.
		{"SELECT k32, ks, count(DISTINCT xd) AS u FROM d GROUP BY k32, ks ORDER BY u DESC, k32, ks LIMIT 7", true},
		{"SELECT xs, count(DISTINCT xs) FROM d GROUP BY xs", true},
		// Many groups, the string last.
		{"SELECT x16, xd, xs, count(DISTINCT k16) FROM d GROUP BY x16, xd, xs", true},
		// HAVING, a filter on the key (Q10's), none passing.
		{"SELECT ks, count(DISTINCT x32) AS u FROM d WHERE ks <> 'k1' GROUP BY ks HAVING count(DISTINCT x32) > 3", true},
		{"SELECT ks, count(DISTINCT x32) FROM d WHERE x16 < 0 GROUP BY ks", true},
		// Split: plain aggregates alongside.
		{"SELECT ks, count(*), sum(a), count(DISTINCT x32) FROM d GROUP BY ks", true},
		// No string key.
		{"SELECT k32, count(DISTINCT xs) FROM d GROUP BY k32", false},
	} {
		for _, threads := range []string{"1", "2"} {
			s, plain := db.NewSession(), db.NewSession()
			plain.noDenseKeys = true
			for _, ss := range []*Session{s, plain} {
				ss.forceSplit = true
				if err := ss.Set("threads", threads); err != nil {
					t.Fatal(err)
				}
			}
			if plan := explainText(t, s, tc.q); strings.Contains(plan, "DENSE_KEYS") != tc.dense {
				t.Errorf("%s: DENSE_KEYS in the plan is %v, want %v:\n%s", tc.q, !tc.dense, tc.dense, plan)
			}
			if plan := explainText(t, plain, tc.q); strings.Contains(plan, "DENSE_KEYS") {
				t.Errorf("%s: DENSE_KEYS with noDenseKeys", tc.q)
			}
			got, want := distinctRows(t, s, tc.q, 0), distinctRows(t, plain, tc.q, 0)
			if !slices.Equal(got, want) {
				t.Errorf("%s (threads %s):\n got  %q\n want %q", tc.q, threads, got, want)
			}
			if len(want) == 0 && !strings.Contains(tc.q, "x16 < 0") {
				t.Errorf("%s: no rows", tc.q)
			}
		}
	}
	// Past the most ids it may give, the statement runs again grouping
	// the keys, and says so.
	s, plain := db.NewSession(), db.NewSession()
	s.maxDenseIDs, s.forceSplit, plain.noDenseKeys = 5, true, true
	for _, q := range []string{
		"SELECT ks, count(DISTINCT x32) FROM d GROUP BY ks",
		"SELECT k32, ks, count(*), count(DISTINCT x32) FROM d GROUP BY k32, ks",
	} {
		res, err := s.Exec(context.Background(), q, nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if notes := strings.Join(res[0].Notes, "; "); !strings.Contains(notes, "ran again grouping the keys") {
			t.Errorf("%s: past 5 ids: notes %q", q, notes)
		}
		if planSays(res[0].Plan, "dense ids") {
			t.Errorf("%s: dense ids after the retry", q)
		}
		if got, want := distinctRows(t, s, q, 0), distinctRows(t, plain, q, 0); !slices.Equal(got, want) {
			t.Errorf("%s: past 5 ids:\n got  %q\n want %q", q, got, want)
		}
		if s.replan.noDense {
			t.Errorf("%s: replan.noDense left set", q)
		}
	}

	// EXPLAIN ANALYZE counts the ids: 7 values of ks, NULL among them.
	s = db.NewSession()
	s.forceSplit = true
	res, err := s.Exec(context.Background(), "EXPLAIN ANALYZE SELECT ks, count(DISTINCT x32) FROM d GROUP BY ks", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res[len(res)-1]
	if plan := rowsString(r.Vecs, r.Rows); !strings.Contains(plan, "ids: 7") {
		t.Errorf("EXPLAIN ANALYZE does not count 7 ids:\n%s", plan)
	}
}

// planSays reports whether n or a node below it has a detail line that
// contains s.
func planSays(n *PlanNode, s string) bool {
	if n == nil {
		return false
	}
	for _, d := range n.Detail {
		if strings.Contains(d, s) {
			return true
		}
	}
	for _, c := range n.Children {
		if planSays(c, s) {
			return true
		}
	}
	return false
}
