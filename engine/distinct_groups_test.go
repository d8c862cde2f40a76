package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dRow is the schema of the table d for the two-step DISTINCT tests: keys
// and values of every integer width, strings, dates, NULLs in each.
type dRow struct {
	K16 int16   `parquet:"k16"`
	K32 *int32  `parquet:"k32,optional"`
	K64 int64   `parquet:"k64"`
	KS  *string `parquet:"ks,optional"`
	X16 int16   `parquet:"x16"`
	X32 *int32  `parquet:"x32,optional"`
	X64 *int64  `parquet:"x64,optional"`
	XU  uint64  `parquet:"xu"`
	XS  *string `parquet:"xs,optional"`
	XD  int32   `parquet:"xd,date"`
	A   *int32  `parquet:"a,optional"`
	F   float64 `parquet:"f"`
	Dup int64   `parquet:"dup"`
}

func distinctDB(t *testing.T) *DB {
	t.Helper()
	dir := t.TempDir()
	var rows []dRow
	for i := 0; i < 3000; i++ {
		r := dRow{
			K16: int16(i%5 - 2), K64: int64(i % 13 * 1e12), X16: int16(i % 37), XU: uint64(i%41) << 60,
			XD: int32(15887 + i%29), F: float64(i%17) / 4, Dup: 7,
		}
		if i%9 != 0 {
			r.K32 = ptr(int32(i % 4))
		}
		if i%11 != 0 {
			r.KS = ptr(fmt.Sprintf("k%d", i%6))
		}
		if i%7 != 0 {
			r.X32 = ptr(int32(i % 101))
		}
		if i%3 != 0 {
			r.X64 = ptr(int64(i%211) * -1e12)
		}
		if i%5 != 0 {
			r.XS = ptr(fmt.Sprintf("v%03d", i%53))
		}
		if i%4 != 0 {
			r.A = ptr(int32(i%19 - 9))
		}
		rows = append(rows, r)
	}
	writeParquet(t, filepath.Join(dir, "d.parquet"), rows)
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// distinctRows runs src and returns its rows, rendered as runSQL does,
// sorted, and with the last drop columns dropped.
func distinctRows(t *testing.T, s *Session, src string, drop int) []string {
	t.Helper()
	res, err := s.Exec(context.Background(), src, nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	r := res[len(res)-1]
	vs := r.Vecs[:len(r.Vecs)-drop]
	var rows []string
	if out := rowsString(vs, r.Rows); out != "" {
		rows = strings.Split(out, ";")
	}
	slices.Sort(rows)
	return rows
}

// explainText runs EXPLAIN of src and returns its plan as text.
func explainText(t *testing.T, s *Session, src string) string {
	t.Helper()
	res, err := s.Exec(context.Background(), "EXPLAIN "+src, nil)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", src, err)
	}
	r := res[len(res)-1]
	return rowsString(r.Vecs, r.Rows)
}

// TestTwoStepDistinct: a GROUP BY with DISTINCT aggregates over one
// argument runs as two GROUP BYs (EXPLAIN says so) and gives the rows the
// single GROUP BY with its sets of (group, value) pairs gives: the same
// query with one more DISTINCT aggregate over another argument, which
// keeps the old path, is the oracle. Every strategy, 2 threads.
func TestTwoStepDistinct(t *testing.T) {
	db := distinctDB(t)
	const oracle = ", count(DISTINCT dup + 1)"
	queries := []string{
		// Keys and x of every integer width, strings, dates, NULLs.
		"SELECT k16, count(DISTINCT x16) FROM d GROUP BY k16",
		"SELECT k32, count(DISTINCT x32) FROM d GROUP BY k32",
		"SELECT k64, count(DISTINCT x64) FROM d GROUP BY k64",
		"SELECT ks, count(DISTINCT xs) FROM d GROUP BY ks",
		"SELECT k32, count(DISTINCT xu) FROM d GROUP BY k32",
		"SELECT ks, count(DISTINCT xd) FROM d GROUP BY ks",
		"SELECT k32, ks, count(DISTINCT x32) FROM d GROUP BY k32, ks",
		// All duplicates; x also a key.
		"SELECT k16, count(DISTINCT dup) FROM d GROUP BY k16",
		"SELECT k16, count(DISTINCT k16) FROM d GROUP BY k16",
		// Other aggregates alongside (ClickBench Q9's shape and more).
		"SELECT k32, sum(a), count(*), avg(a), count(DISTINCT x64) FROM d GROUP BY k32",
		"SELECT ks, count(a), min(a), max(a), min(xs), max(f), sum(f), avg(f), avg(x16), sum(x16), count(DISTINCT x32) FROM d GROUP BY ks",
		// Several DISTINCT aggregates over one x.
		"SELECT k16, count(DISTINCT x32), sum(DISTINCT x32), avg(DISTINCT x32), count(*) FROM d GROUP BY k16",
		"SELECT k32, sum(DISTINCT x64), avg(DISTINCT x64), count(DISTINCT x64), count(x64) FROM d GROUP BY k32",
		// HAVING and ORDER BY on the results, expressions over them.
		"SELECT k32, count(DISTINCT xs) AS u, avg(a) FROM d GROUP BY k32 HAVING count(DISTINCT xs) > 40 ORDER BY u DESC",
		"SELECT ks, count(DISTINCT x16) + count(*) AS u FROM d GROUP BY ks HAVING avg(a) < 0 OR sum(a) IS NULL ORDER BY u DESC, ks LIMIT 3",
		// Filters: some rows, none.
		"SELECT k32, count(DISTINCT x16), sum(a), avg(a), count(*) FROM d WHERE x16 < 5 GROUP BY k32",
		"SELECT k32, count(DISTINCT x16), sum(a), avg(a), count(*) FROM d WHERE x16 < 0 GROUP BY k32",
		// All of a's values NULL in some groups: sum NULL, count 0.
		"SELECT k16, x16, sum(a), count(a), avg(a), count(DISTINCT x32) FROM d WHERE a IS NULL OR x16 = 1 GROUP BY k16, x16",
	}
	for _, strat := range []string{"naive", "radix", "parallel", "auto"} {
		s := db.NewSession()
		s.forceTwoStep = true
		for _, set := range [][2]string{{"group_by", strat}, {"threads", "2"}, {"radix_bits", "3"}} {
			if err := s.Set(set[0], set[1]); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range queries {
			if plan := explainText(t, s, q); !strings.Contains(plan, "pairs grouped first, then counted per") {
				t.Errorf("%s: %s: not run in two steps:\n%s", strat, q, plan)
			}
			// The oracle's extra aggregate goes before any HAVING or
			// ORDER BY, after the select list.
			at := strings.Index(q, " FROM ")
			old := q[:at] + oracle + q[at:]
			if plan := explainText(t, s, old); strings.Contains(plan, "pairs grouped first") {
				t.Fatalf("the oracle %s ran in two steps", old)
			}
			got, want := distinctRows(t, s, q, 0), distinctRows(t, s, old, 1)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s\n got  %q\n want %q", strat, q, got, want)
			}
			if strings.Contains(q, "x16 < 0") && len(got) != 0 {
				t.Errorf("%s: %s: %d rows from no input", strat, q, len(got))
			}
		}
	}
}

// TestTwoStepDistinctNotApplied: shapes that keep the single GROUP BY.
func TestTwoStepDistinctNotApplied(t *testing.T) {
	db := distinctDB(t)
	s := db.NewSession()
	s.forceTwoStep = true
	for _, q := range []string{
		// No keys: the lessons' count(*), count(DISTINCT UserID).
		"SELECT count(*), count(DISTINCT x32) FROM d",
		// DISTINCT over two arguments.
		"SELECT k16, count(DISTINCT x32), count(DISTINCT xs) FROM d GROUP BY k16",
		// A BIGINT sum or average, whose partial sums could overflow.
		"SELECT k16, sum(x64), count(DISTINCT x32) FROM d GROUP BY k16",
		"SELECT k16, avg(xu), count(DISTINCT x32) FROM d GROUP BY k16",
	} {
		if plan := explainText(t, s, q); strings.Contains(plan, "pairs grouped first") {
			t.Errorf("%s: ran in two steps:\n%s", q, plan)
		}
	}
}

// TestTwoStepPays: the two steps run from the start where the single
// GROUP BY's pair sets, at a slot per input row and worker, would pass one
// and a half times the memory limit; not without a limit or over a
// relation of unknown size. The sizes are ClickBench's at 20M and 100M
// rows.
func TestTwoStepPays(t *testing.T) {
	const gb = 1_000_000_000 // memory_limit's GB, as DuckDB's
	for _, tc := range []struct {
		rows    int64
		threads int
		limit   int64
		want    bool
	}{
		{100_000_000, 2, 4 * gb, false}, // Q8 and Q9 at 100M: their sets fit
		{100_000_000, 2, 3 * gb, false},
		{100_000_000, 2, 2 * gb, true},
		{300_000_000, 2, 4 * gb, true},
		{20_000_000, 2, 4 * gb, false},
		{20_000_000, 2, 300_000_000, true},
		{20_000_000, 1, 300_000_000, false},
		{100_000_000, 2, 0, false}, // no limit
		{-1, 2, 1 << 20, false},    // a subquery
		{1000, 2, 4 * gb, false},
	} {
		if got := twoStepPays(tc.rows, tc.threads, tc.limit); got != tc.want {
			t.Errorf("twoStepPays(%d, %d, %d) = %v, want %v", tc.rows, tc.threads, tc.limit, got, tc.want)
		}
	}
	// With other aggregates alongside, a small table under the default
	// settings keeps the single GROUP BY;
	// under a limit its pair sets could pass one and a half times (3,000
	// rows at 16 bytes on 4 workers: 192,000 bytes), it runs in two steps.
	db := distinctDB(t)
	s := db.NewSession()
	const q = "SELECT k16, count(DISTINCT x32), sum(a) FROM d GROUP BY k16"
	if plan := explainText(t, s, q); strings.Contains(plan, "pairs grouped first") {
		t.Errorf("default settings: ran in two steps:\n%s", plan)
	}
	// So do DISTINCT aggregates alone, while their groups are few.
	const alone = "SELECT k16, count(DISTINCT x32) FROM d GROUP BY k16"
	if plan := explainText(t, s, alone); strings.Contains(plan, "pairs grouped first") {
		t.Errorf("count(DISTINCT) alone: ran in two steps:\n%s", plan)
	}
	if err := s.Set("memory_limit", "80KB"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("threads", "4"); err != nil {
		t.Fatal(err)
	}
	if plan := explainText(t, s, q); !strings.Contains(plan, "pairs grouped first") {
		t.Errorf("memory_limit 80KB, 4 threads: not run in two steps:\n%s", plan)
	}
	// SET group_by = 'naive' keeps the sets: its GROUP BYs cannot spill.
	s.Set("group_by", "naive")
	if plan := explainText(t, s, q); strings.Contains(plan, "pairs grouped first") {
		t.Errorf("naive: ran in two steps:\n%s", plan)
	}
	s.Set("group_by", "auto")
	// Under a filter, half the rows count: their sets fit.
	const filtered = "SELECT k16, count(DISTINCT x32), sum(a) FROM d WHERE x16 > 0 GROUP BY k16"
	if plan := explainText(t, s, filtered); strings.Contains(plan, "pairs grouped first") {
		t.Errorf("memory_limit 80KB, filtered: ran in two steps:\n%s", plan)
	}
}

// TestRetryInTwoSteps: a statement runs again in two steps only when it
// passed the memory limit with a grouped DISTINCT the gate declined, and
// was not cancelled.
func TestRetryInTwoSteps(t *testing.T) {
	db := distinctDB(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	overLimit := fmt.Errorf("HASH_GROUP_BY: %w", ErrMemoryLimit)
	for _, tc := range []struct {
		name     string
		declined bool
		ctx      context.Context
		err      error
		want     bool
	}{
		{"declined, over the limit", true, context.Background(), overLimit, true},
		{"declined, too many groups", true, context.Background(), fmt.Errorf("HASH_GROUP_BY: ~9 groups, past 3: %w", errManyDistinctGroups), true},
		{"none declined", false, context.Background(), overLimit, false},
		{"another error", true, context.Background(), errors.New("disk full"), false},
		{"cancelled", true, cancelled, overLimit, false},
	} {
		s := db.NewSession()
		s.replan.declined = tc.declined
		if got := s.retryInTwoSteps(tc.ctx, tc.err); got != tc.want || s.replan.twoStep != tc.want {
			t.Errorf("%s: retryInTwoSteps = %v (replan.twoStep %v), want %v", tc.name, got, s.replan.twoStep, tc.want)
		}
	}
	// Planned again for the retry, the declined aggregation runs in two
	// steps and says why; the session plans as before once it is done.
	s := db.NewSession()
	const q = "SELECT k16, count(DISTINCT x32), count(*) FROM d GROUP BY k16"
	s.replan.twoStep, s.replan.why = true, "the (group, value) sets of one GROUP BY passed memory_limit"
	if plan := explainText(t, s, q); !strings.Contains(plan, "passed memory_limit: the statement ran again") {
		t.Errorf("retry: not run in two steps:\n%s", plan)
	}
	s.replan.twoStep = false
	if plan := explainText(t, s, q); strings.Contains(plan, "pairs grouped first") || !s.replan.declined {
		t.Errorf("after the retry: ran in two steps (or declined nothing):\n%s", plan)
	}
}

// TestOneStepGroups: DISTINCT aggregates alone run in one step; where the
// estimate finds more groups than one step serves, the statement runs
// again in two, says so, and gives the same rows.
func TestOneStepGroups(t *testing.T) {
	db := distinctDB(t)
	for _, q := range []string{
		"SELECT k16, count(DISTINCT x32) FROM d GROUP BY k16",
		"SELECT ks, count(DISTINCT x64), sum(DISTINCT x64) FROM d GROUP BY ks",
		"SELECT k32, count(DISTINCT xs) AS u FROM d WHERE x16 > 0 GROUP BY k32",
	} {
		for _, threads := range []string{"1", "2"} {
			one, guarded := db.NewSession(), db.NewSession()
			guarded.maxOneStepGroups = 3
			for _, s := range []*Session{one, guarded} {
				if err := s.Set("threads", threads); err != nil {
					t.Fatal(err)
				}
			}
			if plan := explainText(t, one, q); strings.Contains(plan, "pairs grouped first") {
				t.Errorf("%s: ran in two steps:\n%s", q, plan)
			}
			res, err := guarded.Exec(context.Background(), "EXPLAIN ANALYZE "+q, nil)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			r := res[len(res)-1]
			if plan := rowsString(r.Vecs, r.Rows); !strings.Contains(plan, "one GROUP BY found more groups than one step serves well: the statement ran again") {
				t.Errorf("%s: past 3 groups, not run again in two steps:\n%s", q, plan)
			}
			if notes := strings.Join(r.Notes, "; "); !strings.Contains(notes, "more groups than one step serves well") {
				t.Errorf("%s: notes %q", q, notes)
			}
			got, want := distinctRows(t, guarded, q, 0), distinctRows(t, one, q, 0)
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("%s (threads %s):\n got  %q\n want %q", q, threads, got, want)
			}
			if guarded.replan.twoStep {
				t.Errorf("%s: replan.twoStep left set", q)
			}
		}
	}
}
