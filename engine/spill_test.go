package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"

	"cachebook/engine/spill"
)

// spillLimit is the memory_limit the spill tests run under: the GROUP BYs
// below take several times as much unlimited on the 300,000-row table.
const spillLimit = "16MB"

// spillSession is a session with group_by, threads, memory_limit and
// temp_directory set.
func spillSession(t *testing.T, db *DB, strategy, threads, limit, dir string) *Session {
	t.Helper()
	s := db.NewSession()
	for k, v := range map[string]string{"group_by": strategy, "threads": threads, "temp_directory": dir, "radix_bits": "6"} {
		if err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if limit != "" {
		if err := s.Set("memory_limit", limit); err != nil {
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
// for every aggregate, at one and two threads; no file is left after, and
// the heap stays within the limit plus 10 % (plus the scan's own).
func TestGroupBySpills(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	db, err := Open(Options{DataDir: memHitsDir(t), CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	queries := []struct{ name, sql string }{
		{"count", "SELECT URL, count(*) FROM hits GROUP BY URL"},
		{"sum avg", "SELECT UserID, sum(ResolutionWidth), avg(ResolutionWidth), count(Title) FROM hits GROUP BY UserID"},
		{"min max", "SELECT UserID, SearchPhrase, min(EventTime), max(URL) FROM hits GROUP BY UserID, SearchPhrase"},
		{"distinct", "SELECT URL, count(DISTINCT UserID) FROM hits GROUP BY URL"},
	}
	for _, q := range queries {
		var want []string
		unlimited := peakHeap(func() { want, _, err = spillRows(t, spillSession(t, db, "radix", "1", "", t.TempDir()), q.sql) })
		if err != nil {
			t.Fatalf("%s unlimited: %v", q.name, err)
		}
		for _, st := range []struct{ strategy, threads string }{{"radix", "1"}, {"parallel", "2"}} {
			t.Run(q.name+"/"+st.strategy+st.threads, func(t *testing.T) {
				dir := t.TempDir()
				s := spillSession(t, db, st.strategy, st.threads, spillLimit, dir)
				var got []string
				var r *Result
				grew := peakHeap(func() { got, r, err = spillRows(t, s, q.sql) })
				if err != nil {
					t.Fatalf("under %s: %v", spillLimit, err)
				}
				if !planHas(r.Plan, "spilled: ") {
					t.Errorf("did not spill under %s", spillLimit)
				}
				if len(got) != len(want) {
					t.Fatalf("%d groups, want %d", len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("row %d: %q, want %q", i, got[i], want[i])
					}
				}
				if f := leftFiles(t, dir); len(f) > 0 {
					t.Errorf("files left: %v", f)
				}
				// The limit plus 10 %, plus what the GC has not yet
				// collected of the spilled buffers and the scan's reads
				// (GOGC is 10 here). The unlimited run's tables and
				// partitions go on huge-page mappings outside the heap,
				// so its figure is only logged.
				limit := s.Settings().MemoryLimit
				if bound := limit*11/10 + 24<<20; grew > bound {
					t.Errorf("heap grew by %d MB, bound %d MB, unlimited %d MB", grew>>20, bound>>20, unlimited>>20)
				}
				t.Logf("%d groups; heap grew by %.1f MB (unlimited: %.1f MB)", len(got), float64(grew)/(1<<20), float64(unlimited)/(1<<20))
			})
		}
	}
}

// TestSpillSplits: with one radix partition, the one spill partition is
// too large for memory alone, so it is split on further hash bits; the
// answer still equals the unlimited one.
func TestSpillSplits(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	db, err := Open(Options{DataDir: memHitsDir(t), CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const q = "SELECT count(*), sum(c), min(u), max(u) FROM (SELECT URL AS u, count(*) AS c FROM hits GROUP BY URL)"
	want, _, err := spillRows(t, spillSession(t, db, "radix", "1", "", t.TempDir()), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []string{"1", "2"} {
		dir := t.TempDir()
		// The one partition's table of 140,000 URLs takes more.
		s := spillSession(t, db, "parallel", threads, "8MB", dir)
		if err := s.Set("radix_bits", "0"); err != nil {
			t.Fatal(err)
		}
		got, r, err := spillRows(t, s, q)
		if err != nil {
			t.Fatalf("threads %s: %v", threads, err)
		}
		if !planHas(r.Plan, "split 16 ways") {
			t.Errorf("threads %s: no spill partition was split", threads)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("threads %s: %d groups differ from the %d unlimited", threads, len(got), len(want))
		}
		if f := leftFiles(t, dir); len(f) > 0 {
			t.Errorf("files left: %v", f)
		}
	}
}

// TestSpillCleanup: a spilling GROUP BY that is interrupted, or that
// passes max_temp_directory_size, leaves no file behind, and the latter
// says which limit it passed.
func TestSpillCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	db, err := Open(Options{DataDir: memHitsDir(t), CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const q = "SELECT UserID, SearchPhrase, URL, count(*) FROM hits GROUP BY UserID, SearchPhrase, URL"
	for _, threads := range []string{"1", "2"} {
		t.Run("disk limit/"+threads, func(t *testing.T) {
			dir := t.TempDir()
			s := spillSession(t, db, "parallel", threads, spillLimit, dir)
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
			s := spillSession(t, db, "parallel", threads, spillLimit, dir)
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
