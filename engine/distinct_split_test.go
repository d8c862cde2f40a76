package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestSplitDistinct: a GROUP BY with DISTINCT aggregates over one argument
// and plain aggregates alongside runs split (EXPLAIN shows the GROUP_JOIN)
// and gives the rows of the single GROUP BY: the same query with one more
// DISTINCT aggregate over another argument, which keeps the old path, is
// the oracle. Every strategy but naive (which keeps the single GROUP BY),
// 1 and 2 threads.
func TestSplitDistinct(t *testing.T) {
	db := distinctDB(t)
	const oracle = ", count(DISTINCT dup + 1)"
	queries := []string{
		// ClickBench Q9's shape: NULL keys (k32), NULL x (x64).
		"SELECT k32, sum(a), count(*), avg(a), count(DISTINCT x64) FROM d GROUP BY k32",
		// String keys with NULLs, every kind of plain aggregate, a
		// BIGINT sum (which the two steps' partials could not take).
		"SELECT ks, count(a), min(a), max(a), min(xs), max(f), sum(f), avg(f), avg(x16), sum(x64), avg(xu), count(DISTINCT x32) FROM d GROUP BY ks",
		// Several DISTINCT aggregates over one x, among plain ones.
		"SELECT k16, count(DISTINCT x32), sum(a), sum(DISTINCT x32), count(*), avg(DISTINCT x32) FROM d GROUP BY k16",
		// Two keys, one a NULL-able string; x a string.
		"SELECT k32, ks, count(DISTINCT xs), count(*) FROM d GROUP BY k32, ks",
		// HAVING and ORDER BY over both kinds.
		"SELECT k32, count(DISTINCT xs) AS u, avg(a) FROM d GROUP BY k32 HAVING count(DISTINCT xs) > 40 AND count(*) > 10 ORDER BY u DESC",
		"SELECT ks, count(DISTINCT x16) + count(*) AS u FROM d GROUP BY ks HAVING avg(a) < 0 OR sum(a) IS NULL ORDER BY u DESC, ks LIMIT 3",
		"SELECT k16, count(*) AS c, count(DISTINCT xd) FROM d GROUP BY k16 ORDER BY c DESC, k16 LIMIT 2",
		// Filters: some rows, none (no groups at all).
		"SELECT k32, count(DISTINCT x16), sum(a), avg(a), count(*) FROM d WHERE x16 < 5 GROUP BY k32",
		"SELECT k32, count(DISTINCT x16), sum(a), avg(a), count(*) FROM d WHERE x16 < 0 GROUP BY k32",
		// Many groups (a key per (k16, x16, xd)), and x among the keys.
		"SELECT k16, x16, xd, sum(a), count(a), avg(a), count(DISTINCT x32) FROM d GROUP BY k16, x16, xd",
		"SELECT k16, f, count(DISTINCT k16), max(xs) FROM d GROUP BY k16, f",
	}
	for _, set := range [][][2]string{
		{{"group_by", "auto"}, {"threads", "2"}},
		{{"group_by", "parallel"}, {"threads", "2"}, {"radix_bits", "3"}},
		{{"group_by", "radix"}, {"threads", "1"}, {"radix_bits", "0"}},
		{{"group_by", "auto"}, {"threads", "1"}, {"pre_aggregate", "false"}},
	} {
		s := db.NewSession()
		s.forceSplit = true
		for _, kv := range set {
			if err := s.Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range queries {
			if plan := explainText(t, s, q); !strings.Contains(plan, "GROUP_JOIN") || !strings.Contains(plan, "pairs grouped first") {
				t.Errorf("%v: %s: not split:\n%s", set, q, plan)
			}
			at := strings.Index(q, " FROM ")
			old := q[:at] + oracle + q[at:]
			if plan := explainText(t, s, old); strings.Contains(plan, "GROUP_JOIN") {
				t.Fatalf("the oracle %s ran split", old)
			}
			got, want := distinctRows(t, s, q, 0), distinctRows(t, s, old, 1)
			if !slices.Equal(got, want) {
				t.Errorf("%v: %s\n got  %q\n want %q", set, q, got, want)
			}
			if strings.Contains(q, "x16 < 0") && len(got) != 0 {
				t.Errorf("%v: %s: %d rows from no input", set, q, len(got))
			}
			if !strings.Contains(q, "x16 < 0") && len(got) == 0 {
				t.Errorf("%v: %s: no rows", set, q)
			}
		}
		// EXPLAIN ANALYZE runs it and says what the side did.
		res, err := s.Exec(context.Background(), "EXPLAIN ANALYZE "+queries[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		r := res[len(res)-1]
		if plan := rowsString(r.Vecs, r.Rows); !strings.Contains(plan, "groups: 5") {
			t.Errorf("%v: EXPLAIN ANALYZE does not count the side's 5 groups of k32:\n%s", set, plan)
		}
	}
}

// TestSplitDistinctNotApplied: shapes that keep another path, even where
// the split is forced.
func TestSplitDistinctNotApplied(t *testing.T) {
	db := distinctDB(t)
	s := db.NewSession()
	s.forceSplit = true
	for _, q := range []string{
		"SELECT k16, count(DISTINCT x32) FROM d GROUP BY k16",                               // DISTINCT alone: two steps
		"SELECT k16, count(DISTINCT x32), count(DISTINCT xs), count(*) FROM d GROUP BY k16", // two arguments
		"SELECT count(*), count(DISTINCT x32) FROM d",                                       // no keys
	} {
		if plan := explainText(t, s, q); strings.Contains(plan, "GROUP_JOIN") {
			t.Errorf("%s: split:\n%s", q, plan)
		}
	}
	s = db.NewSession() // under the memory limit, split unless naive
	s.Set("memory_limit", "80KB")
	s.Set("threads", "4")
	s.Set("group_by", "naive")
	const q = "SELECT k16, count(DISTINCT x32), count(*) FROM d GROUP BY k16"
	if plan := explainText(t, s, q); strings.Contains(plan, "GROUP_JOIN") {
		t.Errorf("naive: split:\n%s", plan)
	}
	s.Set("group_by", "auto")
	if plan := explainText(t, s, q); !strings.Contains(plan, "GROUP_JOIN") {
		t.Errorf("memory_limit 80KB, 4 threads: not split:\n%s", plan)
	}
}

// TestSplitDistinctMemory: under a memory limit too small for its
// partitions, the split spills them and answers as without a limit; under
// one too small for anything it fails with ErrMemoryLimit.
func TestSplitDistinctMemory(t *testing.T) {
	db := distinctDB(t)
	const q = "SELECT k16, x16, xd, sum(a), count(*), count(DISTINCT x32) FROM d GROUP BY k16, x16, xd"
	want := distinctRows(t, db.NewSession(), q, 0)
	s := db.NewSession()
	s.forceSplit = true
	for _, set := range []string{"SET threads = 2", "SET group_by = 'parallel'", "SET radix_bits = 4",
		"SET memory_limit = '2MB'", "SET temp_directory = '" + t.TempDir() + "'"} {
		if _, err := s.Exec(context.Background(), set, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := distinctRows(t, s, q, 0); !slices.Equal(got, want) {
		t.Errorf("under 2MB:\n got  %q\n want %q", got, want)
	}
	s.Set("memory_limit", "1KB")
	if _, err := s.Exec(context.Background(), q, nil); !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("under 1KB: %v, want ErrMemoryLimit", err)
	}
}

// TestSplitDistinctDrain: where the estimate stops in the middle of a row
// group, the parallel workers finish it through drain (hashAggOp.source),
// which passes through the side's GROUP BY and the dense ids as next
// does: no row is lost or counted twice.
func TestSplitDistinctDrain(t *testing.T) {
	dir := t.TempDir()
	type row struct {
		K  string `parquet:"k"`
		KI int32  `parquet:"ki"`
		X  int64  `parquet:"x"`
		A  int32  `parquet:"a"`
	}
	rows := make([]row, 50_000)
	for i := range rows {
		rows[i] = row{K: fmt.Sprintf("k%d", i%7), KI: int32(i % 5), X: int64(i % 1009), A: int32(i % 3)}
	}
	f, err := os.Create(filepath.Join(dir, "t.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](f, parquet.MaxRowsPerRowGroup(40_000))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"SELECT k, count(*), sum(a), count(DISTINCT x) FROM t GROUP BY k",
		"SELECT ki, count(*), sum(a), count(DISTINCT x) FROM t GROUP BY ki",
		"SELECT k, count(DISTINCT x) FROM t GROUP BY k",
	} {
		s, plain := db.NewSession(), db.NewSession()
		s.forceSplit, plain.noDenseKeys = true, true
		for _, ss := range []*Session{s, plain} {
			if err := ss.Set("threads", "2"); err != nil {
				t.Fatal(err)
			}
			if err := ss.Set("group_by", "parallel"); err != nil {
				t.Fatal(err)
			}
		}
		got := runSketching(t, s, q, 1000)
		want := runSQL(t, plain, strings.Replace(q, " FROM", ", count(DISTINCT x + 1) FROM", 1))
		// The oracle's last column goes.
		var trimmed []string
		for _, r := range strings.Split(want, ";") {
			trimmed = append(trimmed, r[:strings.LastIndex(r, ",")])
		}
		g, wt := strings.Split(got, ";"), trimmed
		slices.Sort(g)
		slices.Sort(wt)
		if !slices.Equal(g, wt) {
			t.Errorf("%s:\n got  %q\n want %q", q, g, wt)
		}
	}
}
