package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"cachebook/engine/gen"
)

// TestGatherKeepsTableOrder checks that a plain filtered SELECT read by
// several workers returns its rows in the order one worker gives, and
// that the queries gatherOp must not change (LIMIT, ORDER BY, aggregates,
// subqueries) do not use it.
func TestGatherKeepsTableOrder(t *testing.T) {
	dir := t.TempDir()
	if err := gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"),
		gen.Options{Rows: 120_000, Seed: 3, RowGroupRows: 10_000}); err != nil {
		t.Fatal(err)
	}
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		q      string
		gather bool
	}{
		{"SELECT UserID, URL FROM hits WHERE RegionID = 229", true},
		{"SELECT WatchID FROM hits WHERE IsRefresh = 0", true}, // most rows pass
		{"SELECT SearchPhrase, EventTime FROM hits WHERE SearchPhrase <> '' AND AdvEngineID = 0", true},
		{"SELECT URL FROM hits WHERE URL LIKE '%google%'", true},
		{"SELECT * FROM hits WHERE CounterID = 62", true},
		{"SELECT UserID FROM hits WHERE UserID = -1", true}, // no row passes
		{"SELECT UserID FROM hits WHERE RegionID = 229 LIMIT 5", false},
		{"SELECT UserID FROM hits WHERE RegionID = 229 ORDER BY UserID", false},
		{"SELECT count(*) FROM hits WHERE RegionID = 229", false},
		{"SELECT * FROM (SELECT UserID FROM hits WHERE RegionID = 229) AS t LIMIT 7", false},
		{"SELECT UserID FROM hits", false},
	} {
		one := db.NewSession()
		one.Set("threads", "1")
		want := runSQL(t, one, tc.q)
		two := db.NewSession()
		two.Set("threads", "2")
		for range 3 {
			if got := runSQL(t, two, tc.q); got != want {
				t.Fatalf("%s: 2 threads gave another order or other rows than 1 (%d against %d bytes)", tc.q, len(got), len(want))
			}
		}
		plan := runSQL(t, two, "EXPLAIN "+tc.q)
		if strings.Contains(plan, "GATHER") != tc.gather {
			t.Errorf("%s: GATHER in the plan is %v, want %v:\n%s", tc.q, !tc.gather, tc.gather, plan)
		}
	}
}
