package difftest

import (
	"context"
	"os"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/engine/gen"
)

// TestSpillMatchesDuckDB runs GROUP BYs whose radix partitions pass a
// small memory_limit, so that they spill to temp_directory, and compares
// their answers with DuckDB's under the same limit; no spill file may be
// left afterwards.
func TestSpillMatchesDuckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	ctx := context.Background()
	_, duck, ours := hitsPair(t, gen.Options{Rows: 300_000, Order: "shuffled", Seed: 1, RowGroupRows: 30_000})
	if _, err := duck.ExecContext(ctx, "SET memory_limit = '64MB'"); err != nil {
		t.Fatal(err)
	}
	queries := []struct{ name, sql string }{
		{"count", "SELECT URL, COUNT(*) AS c FROM hits GROUP BY URL"},
		{"sum avg", "SELECT UserID, SUM(ResolutionWidth), AVG(ResolutionWidth), COUNT(Title) FROM hits GROUP BY UserID"},
		{"min max", "SELECT UserID, SearchPhrase, MIN(EventTime), MAX(URL) FROM hits GROUP BY UserID, SearchPhrase"},
		{"distinct", "SELECT URL, COUNT(DISTINCT UserID) FROM hits GROUP BY URL"},
	}
	for _, q := range queries {
		shape, err := ParseShape(q.sql)
		if err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
		refSQL, keys := shape.OrderedQuery()
		full, err := DuckQuery(ctx, duck, refSQL)
		if err != nil {
			t.Fatalf("DuckDB %s: %v", refSQL, err)
		}
		ref, err := NewReference(shape, full, keys)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []struct{ name, set string }{
			{"radix", "SET group_by = 'radix'; SET threads = 1"},
			{"parallel", "SET group_by = 'parallel'; SET threads = 2"},
		} {
			t.Run(q.name+"/"+st.name, func(t *testing.T) {
				tmp := t.TempDir()
				set := st.set + "; SET radix_bits = 6; SET memory_limit = '16MB'; SET temp_directory = " + SQLString(tmp) + "; "
				res, err := ours.NewSession().Exec(ctx, set+q.sql, nil)
				if err != nil {
					t.Fatal(err)
				}
				last := res[len(res)-1]
				if !spilled(last.Plan) {
					t.Errorf("did not spill")
				}
				got, err := FromVectors(last.Columns, last.Vecs, last.Rows)
				if err != nil {
					t.Fatal(err)
				}
				if m := Compare(got, ref); m != nil {
					t.Error(m)
				}
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Errorf("%d entries left in temp_directory", len(left))
				}
			})
		}
	}
}

// spilled reports whether a node of the plan says that it spilled.
func spilled(n *engine.PlanNode) bool {
	if n == nil {
		return false
	}
	for _, d := range n.Detail {
		if strings.HasPrefix(d, "spilled: ") {
			return true
		}
	}
	for _, c := range n.Children {
		if spilled(c) {
			return true
		}
	}
	return false
}
