package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/spill"
)

// spillLimit is the memory_limit the spill tests run under: the GROUP BYs
// below take several times as much unlimited on the 300,000-row table.
const spillLimit = "16MB"

// spillSession is a session with group_by strategy, threads, memory_limit
// limit (if not empty) and temp_directory dir, radix_bits 6.
func spillSession(t *testing.T, db *DB, strategy, threads, limit, dir string) *Session {
	t.Helper()
	return settingsSession(t, db, dir, limit, "group_by", strategy, "threads", threads)
}

// settingsSession is a session with the given settings (name, value, ...)
// on top of temp_directory dir and radix_bits 6; memory_limit is set
// last, if limit is not empty.
func settingsSession(t *testing.T, db *DB, dir, limit string, set ...string) *Session {
	t.Helper()
	s := db.NewSession()
	set = append([]string{"temp_directory", dir, "radix_bits", "6"}, set...)
	if limit != "" {
		set = append(set, "memory_limit", limit)
	}
	for i := 0; i+1 < len(set); i += 2 {
		if err := s.Set(set[i], set[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// spillRows runs q and returns its rows rendered, sorted.
func spillRows(t *testing.T, s *Session, q string) ([]string, *Result, error) {
	t.Helper()
	res, err := s.Exec(context.Background(), q, nil)
	if err != nil {
		return nil, nil, err
	}
	r := res[len(res)-1]
	rows := make([]string, r.Rows)
	for i := range rows {
		var b strings.Builder
		for _, v := range r.Vecs {
			b.WriteString(v.Format(i))
			b.WriteByte('|')
		}
		rows[i] = b.String()
	}
	sort.Strings(rows)
	return rows, r, nil
}

// planHas reports whether a line of the plan's details contains s.
func planHas(n *PlanNode, s string) bool {
	if n == nil {
		return false
	}
	for _, d := range n.Detail {
		if strings.Contains(d, s) {
			return true
		}
	}
	for _, c := range n.Children {
		if planHas(c, s) {
			return true
		}
	}
	return false
}

// leftFiles returns the files under dir.
func leftFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// TestGroupBySpills: GROUP BYs whose partitions pass a small memory_limit
// spill to temp_directory and give the answer they give without a limit,
// for every aggregate, at one and two threads, the tuned count(*) loop's
// shape and auto included; no file is left after, and the heap stays
// within the limit plus 10 % (plus the scan's own).
func TestGroupBySpills(t *testing.T) {
	db := memDB(t)
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	const (
		count         = "SELECT URL, count(*) FROM hits GROUP BY URL"
		sumAvg        = "SELECT UserID, sum(ResolutionWidth), avg(ResolutionWidth), count(Title) FROM hits GROUP BY UserID"
		minMax        = "SELECT UserID, SearchPhrase, min(EventTime), max(URL) FROM hits GROUP BY UserID, SearchPhrase"
		distinct      = "SELECT URL, count(DISTINCT UserID) FROM hits GROUP BY URL"
		intCount      = "SELECT UserID, count(*) FROM hits GROUP BY UserID"
		intCountWhere = "SELECT UserID, count(*) FROM hits WHERE ResolutionWidth > 0 GROUP BY UserID"
		// A result small enough for the limit.
		pair = "SELECT count(*), sum(c), min(u), max(p) FROM (SELECT UserID AS u, SearchPhrase AS p, count(*) AS c FROM hits GROUP BY UserID, SearchPhrase)"
	)
	radix1 := []string{"group_by", "radix", "threads", "1"}
	parallel2 := []string{"group_by", "parallel", "threads", "2"}
	cases := []struct {
		name, sql, limit string
		set              []string
		plan             string // in EXPLAIN ANALYZE, besides "spilled: "
	}{
		{"count/radix1", count, spillLimit, radix1, ""},
		{"count/parallel2", count, spillLimit, parallel2, ""},
		// 256 partitions under a limit the rest of the statement takes
		// most of: a worker past the share still writes its partitions.
		{"top count/radix1 256 partitions", count + " ORDER BY 2 DESC, 1 LIMIT 10", "8MB", []string{"group_by", "radix", "radix_bits", "8", "threads", "1"}, ""},
		{"sum avg/radix1", sumAvg, spillLimit, radix1, ""},
		{"sum avg/parallel2", sumAvg, spillLimit, parallel2, ""},
		{"min max/radix1", minMax, spillLimit, radix1, ""},
		{"min max/parallel2", minMax, spillLimit, parallel2, ""},
		{"distinct/radix1", distinct, spillLimit, radix1, ""},
		{"distinct/parallel2", distinct, spillLimit, parallel2, ""},
		// The tuned count(*) loop cannot spill: the generic loop runs.
		{"int count/radix1", intCount, "4MB", radix1, "tuned integer count(*) loop cannot spill"},
		{"int count/parallel2", intCount, "4MB", parallel2, "tuned integer count(*) loop cannot spill"},
		// Under a filter its rows are bounded by the table's.
		{"int count where/radix1", intCountWhere, "4MB", radix1, "tuned integer count(*) loop cannot spill"},
		// auto with radix_bits auto under a limit its estimate's first
		// million rows would pass alone: it picks the spilling plan.
		{"auto/1", pair, "4MB", []string{"group_by", "auto", "radix_bits", "auto", "threads", "1"}, "): auto: "},
		{"auto/2", pair, "4MB", []string{"group_by", "auto", "radix_bits", "auto", "threads", "2"}, "): auto: "},
	}
	// The unlimited answer of the cases' query, computed again when the
	// query changes: kept for every query, the answers' strings would
	// grow the live heap, and the garbage GOGC lets the heap hold with it.
	var want []string
	var wantSQL string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if raceSlowdown > 1 && slices.Contains(tc.set, "1") {
				// Under the race detector, only the cases where
				// workers run at once: the rest take a minute.
				t.Skip("one thread, under the race detector")
			}
			var err error
			if wantSQL != tc.sql {
				want, wantSQL = nil, ""
				want, _, err = spillRows(t, settingsSession(t, db, t.TempDir(), ""), tc.sql)
				if err != nil {
					t.Fatalf("unlimited: %v", err)
				}
				wantSQL = tc.sql
			}
			dir := t.TempDir()
			s := settingsSession(t, db, dir, tc.limit, tc.set...)
			var got []string
			var r *Result
			grew := peakHeap(func() { got, r, err = spillRows(t, s, tc.sql) })
			if err != nil {
				t.Fatalf("under %s: %v", tc.limit, err)
			}
			if !planHas(r.Plan, "spilled: ") {
				t.Errorf("did not spill under %s", tc.limit)
			}
			if tc.plan != "" && !planHas(r.Plan, tc.plan) {
				t.Errorf("EXPLAIN ANALYZE does not say %q", tc.plan)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%d groups differ from the %d unlimited", len(got), len(want))
			}
			if f := leftFiles(t, dir); len(f) > 0 {
				t.Errorf("files left: %v", f)
			}
			// The limit plus 10 %, plus what the GC has not yet
			// collected of the spilled buffers and the scan's reads
			// (GOGC is 10 here).
			limit := s.Settings().MemoryLimit
			if bound := limit*11/10 + 24<<20; grew > bound {
				t.Errorf("heap grew by %d MB, bound %d MB", grew>>20, bound>>20)
			}
			t.Logf("%d groups; heap grew by %.1f MB", len(got), float64(grew)/(1<<20))
		})
	}
}

// TestSpillSplits: a spill partition too large for memory alone is split
// on further hash bits (radix_bits 0: one spill partition of every group;
// agg's TestSpillSplitsAgain splits parts again); a partition of few
// groups and many rows is not split at all, its table being small. The
// answers equal the unlimited ones, and no file is left.
func TestSpillSplits(t *testing.T) {
	db := memDB(t)
	const (
		urls  = "SELECT count(*), sum(c), min(u), max(u) FROM (SELECT URL AS u, count(*) AS c FROM hits GROUP BY URL)"
		small = "SELECT AdvEngineID, count(*), sum(ResolutionWidth) FROM hits GROUP BY AdvEngineID"
	)
	cases := []struct {
		name, sql, limit string
		set              []string
		depth            int // the levels of splits EXPLAIN shows (0: none)
	}{
		{"one level/1", urls, "8MB", []string{"threads", "1"}, 1},
		{"one level/2", urls, "8MB", []string{"threads", "2"}, 1},
		// Pre-aggregation off: every row is partitioned and spilled.
		{"few groups", small, "4MB", []string{"threads", "1", "pre_aggregate", "false"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, _, err := spillRows(t, settingsSession(t, db, t.TempDir(), ""), tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			s := settingsSession(t, db, dir, tc.limit, append([]string{"group_by", "parallel", "radix_bits", "0"}, tc.set...)...)
			got, r, err := spillRows(t, s, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			if !planHas(r.Plan, "spilled: ") {
				t.Errorf("did not spill under %s", tc.limit)
			}
			split := fmt.Sprintf("split %d ways on further hash bits, %d levels deep", agg.SplitWays, tc.depth)
			switch {
			case tc.depth == 0 && planHas(r.Plan, "ways on further hash bits"):
				t.Errorf("a partition of few groups was split")
			case tc.depth > 0 && !planHas(r.Plan, split):
				t.Errorf("EXPLAIN ANALYZE does not say %q", split)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%d groups differ from the %d unlimited", len(got), len(want))
			}
			if f := leftFiles(t, dir); len(f) > 0 {
				t.Errorf("files left: %v", f)
			}
		})
	}
}

// TestNaiveCannotSpill: naive, whose one hash table has no partitions to
// spill, fails under a limit its table would pass before it builds the
// table, with an error that says so and names radix; the generic and the
// tuned count(*) loop alike. Under a limit the table fits, it answers.
func TestNaiveCannotSpill(t *testing.T) {
	db := memDB(t)
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	for _, q := range []string{
		"SELECT URL, count(*) FROM hits GROUP BY URL",
		"SELECT WatchID, count(*) FROM hits GROUP BY WatchID",
	} {
		t.Run(q, func(t *testing.T) {
			s := settingsSession(t, db, t.TempDir(), "4MB", "group_by", "naive")
			var err error
			grew := peakHeap(func() { _, _, err = spillRows(t, s, q) })
			if !errors.Is(err, ErrMemoryLimit) {
				t.Fatalf("want the memory limit's error, got %v", err)
			}
			for _, w := range []string{"naive GROUP BY needs about", "for one hash table of", "naive has no partitions to spill", "SET group_by = 'radix'"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			// Before the table: what the estimate held, an eighth of
			// the limit, and the scan's reads.
			if grew > 12<<20 {
				t.Errorf("heap grew by %d MB before failing", grew>>20)
			}
			if _, _, err := spillRows(t, settingsSession(t, db, t.TempDir(), "256MB", "group_by", "naive"), q); err != nil {
				t.Errorf("under 256MB: %v", err)
			}
		})
	}
}

// TestSpillCleanup: a spilling GROUP BY that is interrupted, or that
// passes max_temp_directory_size, leaves no file behind, and the latter
// says which limit it passed.
func TestSpillCleanup(t *testing.T) {
	db := memDB(t)
	const q = "SELECT UserID, SearchPhrase, URL, count(*) FROM hits GROUP BY UserID, SearchPhrase, URL"
	for _, threads := range []string{"1", "2"} {
		t.Run("disk limit/"+threads, func(t *testing.T) {
			dir := t.TempDir()
			s := settingsSession(t, db, dir, spillLimit, "group_by", "parallel", "threads", threads)
			if err := s.Set("max_temp_directory_size", "100KB"); err != nil {
				t.Fatal(err)
			}
			_, err := s.Exec(context.Background(), q, nil)
			if !errors.Is(err, spill.ErrSpaceLimit) || !strings.Contains(err.Error(), "max_temp_directory_size") {
				t.Fatalf("want the max_temp_directory_size error, got %v", err)
			}
			if f := leftFiles(t, dir); len(f) > 0 {
				t.Errorf("files left: %v", f)
			}
		})
		t.Run("interrupt/"+threads, func(t *testing.T) {
			dir := t.TempDir()
			s := settingsSession(t, db, dir, spillLimit, "group_by", "parallel", "threads", threads)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := s.Exec(ctx, q, nil)
				done <- err
			}()
			// Cancel once the first spill file exists.
			deadline := time.Now().Add(20 * time.Second)
			for len(leftFiles(t, dir)) == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			cancel()
			// The query spills for longer than the loop above takes to
			// see its first file, so the cancel lands mid-spill.
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("want context.Canceled after the cancel, got %v", err)
			}
			if f := leftFiles(t, dir); len(f) > 0 {
				t.Errorf("files left: %v", f)
			}
		})
	}
}
