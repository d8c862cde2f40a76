package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"cachebook/engine/gen"
	"cachebook/engine/sql"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if memHits.dir != "" {
		os.RemoveAll(memHits.dir)
	}
	os.Exit(code)
}

// memHits is a generated hits table of memRows rows in 10 row groups,
// made once per test binary: about 80 MB decoded, 28 MB on disk.
var memHits struct {
	once sync.Once
	dir  string
	err  error
}

const memRows = 300_000

func memHitsDir(t *testing.T) string {
	t.Helper()
	memHits.once.Do(func() {
		memHits.dir, memHits.err = os.MkdirTemp("", "cachebook-memtest-*")
		if memHits.err == nil {
			memHits.err = gen.WriteFile(context.Background(), filepath.Join(memHits.dir, "hits.parquet"),
				gen.Options{Rows: memRows, Seed: 1, RowGroupRows: memRows / 10, Order: "clustered"})
		}
	})
	if memHits.err != nil {
		t.Fatal(memHits.err)
	}
	return memHits.dir
}

// memDB opens the generated hits table (memHitsDir) with a column cache
// of 1 MiB, so that a query's scans decode what they read and its memory
// is the statement's own; it skips the test in -short mode.
func memDB(t *testing.T) *DB {
	t.Helper()
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	db, err := Open(Options{DataDir: memHitsDir(t), CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// peakHeap runs f and returns how far the live heap rose above what it was
// before, sampled every half millisecond through runtime/metrics.
func peakHeap(f func()) int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		sm := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(sm)
			peak = max(peak, sm[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	if peak < base {
		return 0
	}
	return int64(peak - base)
}

// TestMemoryBounds runs the cells that used to exhaust the machine under a
// 16 MB limit: each must end in ErrMemoryLimit (or another clear error) or
// a bounded answer, and the heap must stay below the stated bound. The
// column cache is kept small, as the scan never needs it.
func TestMemoryBounds(t *testing.T) {
	db := memDB(t)
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // the heap then tracks what is live
	const MB = 1 << 20
	regexp := "SELECT REGEXP_REPLACE(URL, '^(.*)$', '" + strings.Repeat(`\1`, 1000) + "') FROM hits"
	var wide []string
	for i := 0; i < 40; i++ {
		wide = append(wide, "URL || Title AS c"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	tests := []struct {
		name, sql string
		want      string // "rows" for an answer, "memory" for ErrMemoryLimit, else text of the error
		rows      int
		bound     int64 // heap growth allowed
	}{
		{"select star", "SELECT * FROM hits", "memory", 0, 48 * MB},
		{"first look", "SELECT * FROM hits LIMIT 10", "rows", 10, 16 * MB},
		{"first look filtered", "SELECT * FROM hits WHERE CounterID = 62 LIMIT 10", "rows", 10, 16 * MB},
		{"top-n", "SELECT * FROM hits ORDER BY EventTime LIMIT 10", "rows", 10, 40 * MB},
		{"regexp blow-up", regexp, "memory", 0, 48 * MB},
		{"wide projection", "SELECT " + strings.Join(wide, ", ") + " FROM hits", "memory", 0, 48 * MB},
		{"many groups", "SELECT URL, Title, count(*) FROM hits GROUP BY URL, Title", "memory", 0, 40 * MB},
		{"nested parentheses (4 MB)", "SELECT " + strings.Repeat("(", 4<<20) + "1", "input too long", 0, 8 * MB},
		{"nested parentheses (500 KB)", "SELECT " + strings.Repeat("(", 500<<10) + "1", "nested too deeply", 0, 8 * MB},
		// 60,000 tokens: past what 16 MB allows the parser (ParseBytesPerToken each).
		{"many statements", strings.Repeat("SELECT 1;", 20000), "memory", 0, 8 * MB},
		{"long select list", "SELECT " + strings.Repeat("CounterID + 1, ", 50000) + "1 FROM hits", "memory", 0, 8 * MB},
		{"many results", strings.Repeat("SELECT * FROM hits LIMIT 2000;", 100), "memory", 0, 48 * MB},
		{"many small statements", strings.Repeat("SELECT 1;", 5000), "rows", 1, 32 * MB},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := db.NewSession()
			if err := s.Set("memory_limit", "16MB"); err != nil {
				t.Fatal(err)
			}
			var res []*Result
			var err error
			grew := peakHeap(func() { res, err = s.Exec(context.Background(), tc.sql, nil) })
			switch tc.want {
			case "rows":
				if err != nil {
					t.Fatalf("want an answer, got %v", err)
				}
				if r := res[len(res)-1]; r.Rows != tc.rows {
					t.Errorf("%d rows, want %d", r.Rows, tc.rows)
				}
			case "memory":
				if !errors.Is(err, ErrMemoryLimit) {
					t.Fatalf("want ErrMemoryLimit, got %v", err)
				}
			default:
				var se *sql.Error
				if !errors.As(err, &se) || !strings.Contains(se.Msg, tc.want) {
					t.Fatalf("want a positioned error %q, got %v", tc.want, err)
				}
			}
			if grew > tc.bound {
				t.Errorf("heap grew by %d MB, bound %d MB", grew/MB, tc.bound/MB)
			}
			t.Logf("heap grew by %.1f MB (bound %d MB); error: %v", float64(grew)/MB, tc.bound/MB, err)
		})
	}
}

// TestStringTempsCharged: a WHERE or an expression of fixed-size result
// whose sub-expressions build strings (REGEXP_REPLACE inside a LIKE or a
// LENGTH) is evaluated over slices whose strings fit the budget, and a
// single row whose strings pass the limit fails with ErrMemoryLimit.
func TestStringTempsCharged(t *testing.T) {
	db := memDB(t)
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	const MB = 1 << 20
	blow := func(n int) string { return "REGEXP_REPLACE(URL, '^(.*)$', '" + strings.Repeat(`\1`, n) + "')" }
	tests := []struct {
		name, limit, sql string
		err              bool
	}{
		// About 19 KB per row: unbounded, the first slice of 1,024 rows
		// built 19 MB, a morsel 300 MB (LIMIT 16384: a streamed scan's
		// first morsel holds the rows the LIMIT needs).
		{"where", "4MB", "SELECT URL FROM hits WHERE " + blow(250) + " LIKE '%' LIMIT 16384", false},
		// A LIMIT 1 scan reads one row first: every URL (20 bytes or
		// more) repeated 120,000 times passes the limit alone.
		{"where, one row past the limit", "2MB", "SELECT URL FROM hits WHERE " + blow(120000) + " LIKE '%' LIMIT 1", true},
		{"length", "4MB", "SELECT length(" + blow(250) + ") AS n FROM hits LIMIT 16384", false},
		{"length, one row past the limit", "2MB", "SELECT length(" + blow(120000) + ") AS n FROM hits LIMIT 1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := db.NewSession()
			if err := s.Set("memory_limit", tc.limit); err != nil {
				t.Fatal(err)
			}
			var err error
			grew := peakHeap(func() { _, err = s.Exec(context.Background(), tc.sql, nil) })
			if tc.err != errors.Is(err, ErrMemoryLimit) {
				t.Fatalf("error %v, want ErrMemoryLimit: %v", err, tc.err)
			}
			if grew > 12*MB {
				t.Errorf("heap grew by %d MB, bound 12 MB", grew/MB)
			}
			t.Logf("heap grew by %.1f MB; error: %v", float64(grew)/MB, err)
		})
	}
}

func TestMemoryLimitSetting(t *testing.T) {
	s := testDB(t).NewSession()
	for _, v := range []string{"1e30", "-1", "0", "lots", "99999999999999999999"} {
		if err := s.Set("memory_limit", v); err == nil {
			t.Errorf("memory_limit = %q accepted: %d", v, s.Settings().MemoryLimit)
		}
	}
	if err := s.Set("memory_limit", "512MB"); err != nil || s.Settings().MemoryLimit != 512*1000*1000 {
		t.Errorf("512MB: %v, %d", err, s.Settings().MemoryLimit)
	}
}

// TestCancelReachesLoops: a cancelled context stops a long query within
// 200 ms, wherever it is (decode, expression evaluation, aggregation).
func TestCancelReachesLoops(t *testing.T) {
	db := memDB(t)
	for _, q := range []string{
		"SELECT count(*) FROM hits WHERE REGEXP_REPLACE(URL, '^(.*)$', '" + strings.Repeat(`\1`, 50) + "') LIKE '%x%'",
		"SELECT REGEXP_REPLACE(Referer, '^(.*)$', '\\1\\1') AS r, count(*) FROM hits GROUP BY r ORDER BY r",
		"SELECT * FROM hits ORDER BY URL",
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := db.NewSession().Exec(ctx, q, nil)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		t0 := time.Now()
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%.40s: %v", q, err)
			}
			if d := time.Since(t0); d > raceSlowdown*200*time.Millisecond {
				t.Errorf("%.40s: stopped %v after the cancel", q, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%.40s: still running 5 s after the cancel", q)
		}
	}
}

// TestEstimateLeftover: the group estimate stops inside a row group; the
// parallel workers must still aggregate the rest of it.
func TestEstimateLeftover(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	db, err := Open(Options{DataDir: memHitsDir(t)}) // row groups of 30,000 rows: two morsels each
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"SELECT count(*) AS groups, sum(c) AS rows FROM (SELECT UserID, count(*) AS c FROM hits GROUP BY UserID) AS t",
		"SELECT count(*) AS groups, sum(c) AS rows FROM (SELECT RegionID, count(*) AS c FROM hits WHERE IsRefresh = 0 GROUP BY RegionID) AS t",
	} {
		var want string
		for _, strat := range []string{"naive", "parallel", "auto"} {
			s := db.NewSession()
			s.Set("group_by", strat)
			s.Set("threads", "2")
			st, err := sql.ParseOne(src)
			if err != nil {
				t.Fatal(err)
			}
			q, err := s.planSelect(context.Background(), st.(*sql.Select), 0)
			if err != nil {
				t.Fatal(err)
			}
			walk(q.root, func(op operator) {
				if a, ok := op.(*hashAggOp); ok {
					a.estimateRows = 1000 // stop after the first morsel
				}
			})
			x := s.newExec(context.Background(), nil, q.root)
			vs, n, err := collect(x, q.root, q.cols[:q.nVisible])
			if err != nil || n != 1 {
				t.Fatalf("%s: %v, %d rows", strat, err, n)
			}
			got := vs[0].Format(0) + "," + vs[1].Format(0)
			if strat == "naive" {
				want = got
			} else if got != want {
				t.Errorf("%s: %s: got %s, naive %s", strat, src, got, want)
			}
		}
	}
}

// TestCellsWithinLimit runs the cells that used to take the server past
// its memory (issue 32), on the generated table, under SET memory_limit =
// '256MB': each must answer or fail with ErrMemoryLimit, and the heap must
// stay within the limit plus 10 % and a small fixed slack. The functions
// that build strings are bounded before they build (thirty nested
// doublings of a row fail before the first), and a sort charges what it
// holds and makes before making it.
func TestCellsWithinLimit(t *testing.T) {
	db := memDB(t)
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // the heap then tracks what is live
	const limit = 256_000_000
	const slack = 24 << 20
	nest := func(x, f string, n int) string {
		for range n {
			x = strings.ReplaceAll(f, "x", x)
		}
		return x
	}
	doubled := func(n int) string { return nest("URL", `REGEXP_REPLACE(x, '^(.*)$', '\1\1')`, n) }
	tests := []struct {
		name, sql string
		answer    bool // an answer is required (else ErrMemoryLimit or an answer)
	}{
		{"30 nested doublings", "SELECT " + doubled(30) + " AS u FROM hits LIMIT 1", false},
		{"24 nested doublings", "SELECT " + doubled(24) + " AS u FROM hits LIMIT 1", false},
		{"30 nested doublings of a 1 KB literal", "SELECT " + nest("'"+strings.Repeat("k", 1000)+"'", `REGEXP_REPLACE(x, '^(.*)$', '\1\1')`, 30) + " AS u", false},
		{"12 nested doublings", "SELECT length(" + doubled(12) + ") AS n FROM hits LIMIT 10", true},
		{"30 nested doublings in WHERE", "SELECT URL FROM hits WHERE " + doubled(30) + " LIKE '%x%' LIMIT 1", false},
		// The SQL of a doubling by concatenation doubles with each level.
		{"20 doublings, 4 concatenations", "SELECT " + nest(doubled(20), "(x || x)", 4) + " AS u FROM hits LIMIT 1", false},
		{"12 concatenations", "SELECT length(" + nest("URL", "concat(x, x)", 12) + ") AS n FROM hits LIMIT 3", true},
		{"20 doublings, upper and lower", "SELECT " + nest(doubled(20), "upper(lower(x))", 2) + " AS u FROM hits LIMIT 1", false},
		{"30 nested doublings grouped", "SELECT " + doubled(30) + " AS u, count(*) FROM hits GROUP BY u LIMIT 1", false},
		{"30 nested doublings sorted", "SELECT URL FROM hits ORDER BY " + doubled(30) + " LIMIT 1", false},
		{"1000 back-references, top 5", "SELECT REGEXP_REPLACE(URL, '^(.*)$', '" + strings.Repeat(`\1`, 1000) + "') AS u FROM hits ORDER BY u DESC LIMIT 5", false},
		{"sort everything by URL", "SELECT * FROM hits ORDER BY URL", false},
		{"top-N with a large offset", "SELECT * FROM hits ORDER BY URL DESC LIMIT 10 OFFSET 270000", false},
		{"group by URL, Title", "SELECT URL, Title, count(*) FROM hits GROUP BY URL, Title", false},
		{"sort by URL, a few columns", "SELECT URL, Title, EventTime FROM hits ORDER BY URL", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := db.NewSession()
			if err := s.Set("memory_limit", "256MB"); err != nil {
				t.Fatal(err)
			}
			var err error
			grew := peakHeap(func() { _, err = s.Exec(context.Background(), tc.sql, nil) })
			switch {
			case err == nil:
			case tc.answer || !errors.Is(err, ErrMemoryLimit):
				t.Fatalf("want an answer%s, got %v", map[bool]string{false: " or ErrMemoryLimit"}[tc.answer], err)
			}
			if bound := int64(limit*11/10 + slack); grew > bound {
				t.Errorf("heap grew by %d MB, bound %d MB", grew>>20, bound>>20)
			}
			t.Logf("heap grew by %.1f MB; error: %v", float64(grew)/(1<<20), err)
		})
	}
}
