package engine

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"cachebook/engine/gen"
	"cachebook/engine/sql"
)

// TestEstimateSeesFilteredRows checks that, with several threads and a
// selective filter, the group estimate sketches the rows that passed the
// filter in the part of the table it counts as read, not the few rows of
// a first morsel while the scan counts a whole decoded row group as read.
func TestEstimateSeesFilteredRows(t *testing.T) {
	dir := t.TempDir()
	const rows = 400_000
	if err := gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"),
		gen.Options{Rows: rows, Seed: 1, RowGroupRows: rows / 4}); err != nil {
		t.Fatal(err)
	}
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct{ where string }{
		{"AdvEngineID = 2"},
		{"RegionID = 229"},
	} {
		t.Run(tc.where, func(t *testing.T) {
			s := db.NewSession()
			s.Set("threads", "2")
			passed, err := strconv.ParseInt(runSQL(t, s, "SELECT count(*) FROM hits WHERE "+tc.where), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if passed < 200 {
				t.Fatalf("the filter passes %d rows: too few for the test", passed)
			}
			st, err := sql.ParseOne("SELECT UserID, count(*) FROM hits WHERE " + tc.where + " GROUP BY UserID")
			if err != nil {
				t.Fatal(err)
			}
			q, err := s.planSelect(context.Background(), st.(*sql.Select), 0)
			if err != nil {
				t.Fatal(err)
			}
			var a *hashAggOp
			walk(q.root, func(op operator) {
				if h, ok := op.(*hashAggOp); ok {
					h.estimateRows = rows / 16
					a = h
				}
			})
			x := s.newExec(context.Background(), nil, q.root)
			if _, _, err := collect(x, q.root, q.cols[:q.nVisible]); err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`HyperLogLog over (\d+) rows`).FindStringSubmatch(strings.Join(a.detail(), "\n"))
			if m == nil {
				t.Fatalf("no estimate in %q", a.detail())
			}
			seen, _ := strconv.ParseInt(m[1], 10, 64)
			// The estimate reads at least a quarter of the table (or
			// 4096 passing rows): about a quarter of the rows that
			// pass, which are spread over the whole table.
			if want := min(passed/8, 4096); seen < want {
				t.Errorf("the sketch saw %d rows, want at least %d of the %d that pass", seen, want, passed)
			}
		})
	}
}
