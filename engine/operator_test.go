package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"cachebook/engine/gen"
	"cachebook/engine/sql"
)

// runTree plans src, renames every operator's label (no code may depend on
// a label), runs the tree and returns its root.
func runTree(t *testing.T, s *Session, src string) operator {
	t.Helper()
	st, err := sql.ParseOne(src)
	if err != nil {
		t.Fatal(err)
	}
	sel := st.(*sql.Select)
	q, err := s.planSelect(context.Background(), sel, 0)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	i := 0
	walk(q.root, func(op operator) {
		op.base().label = fmt.Sprintf("renamed-%d", i)
		i++
	})
	x := s.newExec(context.Background(), nil, q.root)
	if _, _, err := collect(x, q.root, q.cols[:q.nVisible]); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return q.root
}

// TestOperatorStats walks the executed operator tree of each query: every
// operator must report the rows it produced and the time it took, and the
// figures must be the operator's own (rows out of one are rows in of its
// parent).
func TestOperatorStats(t *testing.T) {
	for _, strat := range []string{"naive", "radix", "parallel", "auto"} {
		s := testDB(t).NewSession()
		s.Set("group_by", strat)
		s.Set("threads", "2")
		for _, src := range []string{
			"SELECT k, count(*) FROM t GROUP BY k",
			"SELECT g, sum(v) AS sv FROM t WHERE k < 5 GROUP BY g HAVING sv > 10 ORDER BY sv DESC LIMIT 2",
			"SELECT k, f FROM t WHERE v > 10 ORDER BY f LIMIT 5 OFFSET 1",
			"SELECT count(*) FROM (SELECT k, count(*) AS c FROM t GROUP BY k) AS sub WHERE c > 1",
			"SELECT DISTINCT g FROM t ORDER BY g",
			"SELECT 1 + 1",
		} {
			root := runTree(t, s, src)
			walk(root, func(op operator) {
				b := op.base()
				if b.stats.rowsOut.Load() <= 0 {
					t.Errorf("%s: %s: %T reports %d rows", strat, src, op, b.stats.rowsOut.Load())
				}
				if b.stats.nanos.Load() <= 0 {
					t.Errorf("%s: %s: %T reports no time", strat, src, op)
				}
				for _, c := range b.children {
					if _, sub := op.(*subqueryOp); sub {
						continue
					}
					if in, out := b.stats.rowsIn.Load(), c.base().stats.rowsOut.Load(); in != out {
						t.Errorf("%s: %s: %T read %d rows, its child %T produced %d", strat, src, op, in, c, out)
					}
				}
			})
			if got := planTree(root, true); !strings.HasPrefix(got.Name, "renamed-") {
				t.Errorf("plan root %q", got.Name)
			}
		}
	}
}

// TestLimitStopsScan: LIMIT without ORDER BY decodes only the row groups
// it needs.
func TestLimitStopsScan(t *testing.T) {
	db := testDB(t) // t has 4 row groups of 300 rows (8 columns)
	s := db.NewSession()
	d0 := db.catalog.Decodes()
	if got := runSQL(t, s, "SELECT k FROM t LIMIT 3"); got != "0;1;2" {
		t.Fatalf("got %q", got)
	}
	if d := db.catalog.Decodes() - d0; d != 1 {
		t.Errorf("LIMIT 3 decoded %d column chunks, want 1 (one column of one row group)", d)
	}
	db = testDB(t)
	s = db.NewSession()
	d0 = db.catalog.Decodes()
	runSQL(t, s, "SELECT * FROM t LIMIT 3")
	if d := db.catalog.Decodes() - d0; d != 8 {
		t.Errorf("SELECT * LIMIT 3 decoded %d column chunks, want 8 (one row group)", d)
	}
	got := runSQL(t, s, "EXPLAIN ANALYZE SELECT * FROM t LIMIT 3")
	if !strings.Contains(got, "row groups: 1 of 4 read, 3 never reached") {
		t.Errorf("EXPLAIN ANALYZE does not show the early stop:\n%s", strings.ReplaceAll(got, ";", "\n"))
	}
	// The streamed scan converts the rows the LIMIT needs, not a morsel,
	// and with a filter doubles its morsels from there: rows 0–2 (k = 1
	// passes), then 3–8 (3, 5, 7).
	for _, tc := range []struct {
		sql, scan string
	}{
		{"SELECT * FROM t LIMIT 3", "SEQ_SCAN  (rows 3, "},
		{"SELECT * FROM t LIMIT 2 OFFSET 5", "SEQ_SCAN  (rows 7, "},
		{"SELECT * FROM t WHERE k % 2 = 1 LIMIT 3", "SEQ_SCAN  (rows 4, "},
	} {
		got := runSQL(t, s, "EXPLAIN ANALYZE "+tc.sql)
		in9 := strings.Contains(got, ", in 9,")
		if !strings.Contains(got, tc.scan) || in9 != strings.Contains(tc.sql, "WHERE") {
			t.Errorf("%s: want %q (and 9 rows in with the filter):\n%s", tc.sql, tc.scan, strings.ReplaceAll(got, ";", "\n"))
		}
	}
}

type clusteredRow struct {
	ID  int64  `parquet:"id"`
	C   int32  `parquet:"c"`
	Pad string `parquet:"pad"`
}

// TestRowGroupPruning: min/max statistics skip the row groups a WHERE
// cannot match, and late materialisation skips the other columns of row
// groups without a match.
func TestRowGroupPruning(t *testing.T) {
	dir := t.TempDir()
	var rows []clusteredRow
	for i := 0; i < 1200; i++ {
		rows = append(rows, clusteredRow{ID: int64(i), C: int32(i / 300), Pad: fmt.Sprint("p", i)})
	}
	writeParquet(t, filepath.Join(dir, "c.parquet"), rows) // 4 row groups: c = 0, 1, 2, 3
	for _, tc := range []struct {
		sql, want string
		decodes   int64
	}{
		{"SELECT count(*), min(id), max(id) FROM c WHERE c = 2", "300,600,899", 2}, // c of group 2
		{"SELECT count(*) FROM c WHERE 2 < c", "300", 1},                           // group 3
		{"SELECT count(*) FROM c WHERE c >= 1 AND c <= 2", "600", 2},               // groups 1, 2
		{"SELECT max(pad) FROM c WHERE c = 1 AND id % 1000 = 999", "NULL", 2},      // c, id of group 1; no match: pad never decoded
		{"SELECT count(*) FROM c WHERE c = 7", "0", 0},                             // nothing read
		{"SELECT count(*) FROM c WHERE c = 2 OR c = 3", "600", 4},                  // OR: no pruning
		{"SELECT min(pad) FROM c WHERE id = 1000", "p1000", 2},                     // id and pad of group 3 only
	} {
		db, err := Open(Options{DataDir: dir}) // a cold cache
		if err != nil {
			t.Fatal(err)
		}
		s := db.NewSession()
		d0 := db.catalog.Decodes()
		if got := runSQL(t, s, tc.sql); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sql, got, tc.want)
		}
		if d := db.catalog.Decodes() - d0; d != tc.decodes {
			t.Errorf("%s: %d column chunks decoded, want %d", tc.sql, d, tc.decodes)
		}
		// Second run: from the cache.
		runSQL(t, s, tc.sql)
	}
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got := runSQL(t, db.NewSession(), "EXPLAIN ANALYZE SELECT count(*) FROM c WHERE c = 2")
	if !strings.Contains(got, "3 skipped by min/max statistics") {
		t.Errorf("EXPLAIN ANALYZE does not show the pruning:\n%s", strings.ReplaceAll(got, ";", "\n"))
	}
}

func TestResetAndAliases(t *testing.T) {
	s := testDB(t).NewSession()
	def := s.Settings()
	runSQL(t, s, "SET group_by = 'radix'; SET threads = 1; SET memory_limit = '64MB'")
	runSQL(t, s, "RESET group_by")
	if st := s.Settings(); st.GroupBy != def.GroupBy || st.Threads != 1 {
		t.Errorf("RESET group_by: %+v", st)
	}
	runSQL(t, s, "RESET ALL")
	if s.Settings() != def {
		t.Errorf("RESET ALL: %+v, want %+v", s.Settings(), def)
	}
	if _, err := s.Exec(context.Background(), "RESET nonsense", nil); err == nil || !strings.Contains(err.Error(), "unknown setting") {
		t.Errorf("RESET nonsense: %v", err)
	}
	for _, tc := range []struct{ sql, want string }{
		{"SELECT k + 1 AS w FROM t WHERE w > 9 LIMIT 1", "10"},
		{"SELECT k AS kk, count(*) AS c FROM t GROUP BY kk HAVING c > 99 AND kk < 2 ORDER BY kk", "0,100;1,100"},
		{"SELECT k AS kk, count(*) AS c FROM t GROUP BY kk ORDER BY c * 0 + kk DESC LIMIT 1", "9,100"},
		{"SELECT f AS k FROM t WHERE k = 9 LIMIT 1", "2.25"}, // a column wins over an alias
	} {
		if got := runSQL(t, s, tc.sql); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sql, got, tc.want)
		}
	}
}

// TestSelectiveFilter: with few matches in a row group the other columns
// are read page by page for the matching morsels only, with the same
// answers.
func TestSelectiveFilter(t *testing.T) {
	s := testDB(t).NewSession()
	for _, tc := range []struct{ sql, want string }{
		{"SELECT s, f FROM t WHERE v = 7 ORDER BY f", "s007,1.75"},
		{"SELECT g, count(*), min(s) FROM t WHERE v IN (7, 11, 513) GROUP BY g ORDER BY g", "g0,1,s013;g1,1,s007;g2,1,s011"},
	} {
		if got := runSQL(t, s, tc.sql); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sql, got, tc.want)
		}
	}
	got := runSQL(t, s, "EXPLAIN ANALYZE SELECT s, f FROM t WHERE v = 7 ORDER BY f")
	if !strings.Contains(got, "1 with few matches") || !strings.Contains(got, "3 skipped by min/max statistics") {
		t.Errorf("EXPLAIN ANALYZE does not show the selective read:\n%s", strings.ReplaceAll(got, ";", "\n"))
	}
}

// TestPassOnceStreams: the first read of a column too large for the cache
// to keep streams it page by page (the query's other columns decoded
// whole), the second decodes it whole and the cache keeps it, the third
// finds it there; every strategy at one and two threads answers as it
// does from a cache that keeps everything, on every read.
func TestPassOnceStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	dir := memHitsDir(t) // 10 row groups of 30,000 rows: two morsels each
	queries := []string{
		"SELECT URL, count(*) AS c, min(EventTime) AS m FROM hits GROUP BY URL ORDER BY c DESC, URL LIMIT 20",
		"SELECT UserID, SearchPhrase, count(*) AS c FROM hits WHERE SearchPhrase <> '' GROUP BY UserID, SearchPhrase ORDER BY c DESC, UserID, SearchPhrase LIMIT 20",
		"SELECT count(*), count(DISTINCT URL), sum(length(Title)) FROM hits WHERE URL LIKE '%google%'",
		"SELECT count(*) FROM (SELECT URL, count(*) AS c FROM hits GROUP BY URL) AS t",
		// Radix partitions copy keys and fixed-width states out of each
		// morsel, so the streams recycle its arrays (min(Title) keeps
		// strings: not recycled).
		"SELECT SearchPhrase, CounterID, count(*) AS c, sum(ResolutionWidth) AS s, avg(UserID) AS a FROM hits GROUP BY SearchPhrase, CounterID ORDER BY c DESC, SearchPhrase, CounterID LIMIT 20",
		"SELECT CounterID, min(Title) AS t, max(URL) AS u FROM hits GROUP BY CounterID ORDER BY CounterID LIMIT 20",
		// Integer keys are copied by every strategy: behind a filter too,
		// the streams convert into the arrays of the morsel before,
		// strlen(URL)'s byte lengths included (all rows passing, and
		// some).
		"SELECT CounterID, avg(strlen(URL)) AS l, count(*) AS c FROM hits WHERE URL <> '' GROUP BY CounterID ORDER BY c DESC, CounterID LIMIT 20",
		"SELECT RegionID, count(*) AS c, sum(ResolutionWidth) AS w, max(strlen(SearchPhrase)) AS m FROM hits WHERE SearchPhrase <> '' AND CounterID > 50 GROUP BY RegionID ORDER BY c DESC, RegionID LIMIT 20",
		// Without keys or a filter, the streams convert each morsel
		// into the arrays of the worker's last one (recycle).
		"SELECT count(*), min(URL), max(Title), sum(length(Title)), min(EventTime), max(UserID), avg(UserID) FROM hits",
	}
	want := referenceResults(t, dir, queries)
	for _, strat := range []string{"naive", "radix", "parallel", "auto"} {
		for _, threads := range []string{"1", "2", "3"} {
			// 64 MiB: URL and Title (some 15 MB each over all row groups)
			// are large columns, kept from their second read on; the
			// integer columns (2.4 MB) are kept at once.
			db, err := Open(Options{DataDir: dir, CacheBytes: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			s := db.NewSession()
			s.Set("group_by", strat)
			s.Set("threads", threads)
			for read := 1; read <= 3; read++ {
				for _, q := range queries {
					if got := runSketching(t, s, q, 1000); got != want[q] {
						t.Errorf("%s, %s threads, read %d: %s:\ngot  %.200s\nwant %.200s", strat, threads, read, q, got, want[q])
					}
				}
			}
			db.Close()
		}
	}
	// EXPLAIN ANALYZE says which row groups were streamed.
	// (The estimate above stops after its first morsel, in the middle of
	// a row group, which the parallel workers finish through drain.)
	db, err := Open(Options{DataDir: dir, CacheBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s := db.NewSession()
	q := "EXPLAIN ANALYZE SELECT URL, count(*) FROM hits GROUP BY URL"
	for read, n := range []string{"10 page by page", ""} {
		got := runSQL(t, s, q)
		if n != "" && !strings.Contains(got, n) || n == "" && strings.Contains(got, "page by page") {
			t.Errorf("read %d: want %q:\n%s", read+1, n, strings.ReplaceAll(got, ";", "\n"))
		}
	}
}

// runSketching runs the query src as runSQL does, with each GROUP BY's
// estimate sketching only its first rows, read on three workers whatever
// the strategy: the aggregation's workers go on with the estimate's
// cursors or, where they are fewer, finish their row groups through
// drain.
func runSketching(t *testing.T, s *Session, src string, rows int64) string {
	t.Helper()
	st, err := sql.ParseOne(src)
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.planSelect(context.Background(), st.(*sql.Select), 0)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	walk(q.root, func(op operator) {
		if a, ok := op.(*hashAggOp); ok {
			a.estimateRows, a.estimateReaders = rows, 3
		}
	})
	vs, n, err := collect(s.newExec(context.Background(), nil, q.root), q.root, q.cols[:q.nVisible])
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return rowsString(vs, n)
}

// TestGroupsStream: a radix GROUP BY hands its groups on partition by
// partition, so that an aggregate over a subquery's groups holds one
// partition's at a time where a GROUP BY over them (which keeps the
// subquery's rows whole) holds all, and a LIMIT stops the aggregation
// early. The statement is locked to its OS thread, as the kernel's
// counters lock it: with one thread, the partitions are aggregated on it.
func TestGroupsStream(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	db, err := Open(Options{DataDir: memHitsDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hooks := &Hooks{LockThreads: true, WorkerStart: func(int) {}, WorkerStop: func(int) {}}
	const inner = "SELECT URL, count(*) AS c FROM hits GROUP BY URL"
	distinct := runSQL(t, db.NewSession(), "SELECT count(DISTINCT URL) FROM hits")
	for _, tc := range []struct{ strategy, threads string }{{"radix", "1"}, {"parallel", "2"}, {"naive", "1"}} {
		s := db.NewSession()
		for k, v := range map[string]string{"group_by": tc.strategy, "threads": tc.threads, "radix_bits": "6"} {
			if err := s.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		// run executes src with the hooks and returns its result, the
		// GROUP BY URL operator and the innermost subquery.
		run := func(src string) (string, *hashAggOp, *subqueryOp) {
			t.Helper()
			st, err := sql.ParseOne(src)
			if err != nil {
				t.Fatal(err)
			}
			var res string
			var agg *hashAggOp
			var sub *subqueryOp
			func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				q, err := s.planSelect(ctx, st.(*sql.Select), 0)
				if err != nil {
					t.Fatal(err)
				}
				x := s.newExec(ctx, hooks, q.root)
				vecs, n, err := collect(x, q.root, q.cols[:q.nVisible])
				if err != nil {
					t.Fatalf("%s: %v", src, err)
				}
				res = rowsString(vecs, n)
				walk(q.root, func(op operator) {
					switch op := op.(type) {
					case *hashAggOp:
						if len(op.keyNames) == 1 && op.keyNames[0] == "URL" {
							agg = op
						}
					case *subqueryOp:
						sub = op // the innermost: walk visits parents first
					}
				})
			}()
			return res, agg, sub
		}
		name := tc.strategy + "/" + tc.threads
		got, a, sub := run("SELECT count(*) AS groups, sum(c) AS rows FROM (" + inner + ") AS t")
		if want := distinct + "," + fmt.Sprint(memRows); got != want {
			t.Fatalf("%s: groups,rows = %s, want %s", name, got, want)
		}
		if !sub.stream || !strings.Contains(strings.Join(sub.detail(), "\n"), "streamed") || sub.stats.memPeak.Load() != 0 {
			t.Errorf("%s: the subquery under an aggregate without keys does not stream: %q, %d bytes held",
				name, sub.detail(), sub.stats.memPeak.Load())
		}
		if tc.strategy != "naive" {
			// 64 partitions: one batch each, a sixty-fourth of the bytes.
			if a.outBatches < 32 || a.outMax > a.outBytes/16 {
				t.Errorf("%s: the groups came in %d batches, at most %d of %d bytes held at once", name, a.outBatches, a.outMax, a.outBytes)
			}
		}
		got, a, sub = run("SELECT sum(n) FROM (SELECT c, count(*) AS n FROM (" + inner + ") AS t GROUP BY c) AS u")
		if got != distinct {
			t.Fatalf("%s: sum over a GROUP BY of the groups = %s, want %s", name, got, distinct)
		}
		if sub.stream || sub.stats.memPeak.Load() < a.outBytes/2 {
			t.Errorf("%s: a subquery under a GROUP BY streams (%v) or holds %d bytes of its %d", name, sub.stream, sub.stats.memPeak.Load(), a.outBytes)
		}
		if tc.strategy == "naive" {
			continue
		}

		// A LIMIT stops the aggregation after the partitions it needs.
		got = runSQL(t, s, "SELECT count(*) FROM (SELECT URL FROM hits GROUP BY URL LIMIT 5) AS t")
		if got != "5" {
			t.Errorf("%s: LIMIT 5 over the groups gave %s rows", name, got)
		}
		res, err := s.Exec(ctx, "EXPLAIN ANALYZE SELECT URL, count(*) FROM hits GROUP BY URL LIMIT 5", hooks)
		if err != nil {
			t.Fatal(err)
		}
		if plan := rowsString(res[0].Vecs, res[0].Rows); !strings.Contains(plan, "groups: stopped after returning") {
			t.Errorf("%s: EXPLAIN ANALYZE does not show the early stop:\n%s", name, strings.ReplaceAll(plan, ";", "\n"))
		}
	}
}

// TestIntEqStreams: where every column streams page by page (its first
// read, under a cache too small to keep it), a filter of one integer equality, or a staged
// filter that starts with one, compares the column's stored values
// (ColumnStream.NextEq), the column made of the constant where an
// operator above reads it, and every strategy and thread count answers
// as from a cache that keeps every column.
func TestIntEqStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	// Shuffled, so that no row group is ruled out by its statistics and
	// the equal rows are scattered over every page.
	dir := t.TempDir()
	if err := gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"),
		gen.Options{Rows: 100_000, Seed: 3, RowGroupRows: 25_000, Order: "shuffled"}); err != nil {
		t.Fatal(err)
	}
	queries := []string{
		"SELECT RegionID, UserID, CounterID FROM hits WHERE RegionID = 229 ORDER BY UserID, CounterID LIMIT 20",
		"SELECT CounterID, count(*) AS c, min(UserID) AS u FROM hits WHERE CounterID = 62 GROUP BY CounterID",
		"SELECT count(*) AS c, max(UserID) AS u FROM hits WHERE CounterID = 62",
		"SELECT count(*) AS c, max(UserID) AS u FROM hits WHERE CounterID = 62 AND IsRefresh = 0",
		"SELECT URLHash, count(*) AS c FROM hits WHERE CounterID = 62 AND TraficSourceID IN (-1, 6) GROUP BY URLHash ORDER BY c DESC, URLHash LIMIT 10",
		"SELECT count(*) AS c FROM hits WHERE RegionID = 123456789",
		"SELECT count(*) AS c FROM hits WHERE ResolutionWidth = 1368",
	}
	want := referenceResults(t, dir, queries)
	for _, strat := range []string{"naive", "auto"} {
		for _, threads := range []string{"1", "2"} {
			for _, q := range queries {
				// A database of its own: a column's first read streams,
				// its next ones decode it whole.
				db, err := Open(Options{DataDir: dir, CacheBytes: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				s := db.NewSession()
				s.Set("group_by", strat)
				s.Set("threads", threads)
				if got := runSQL(t, s, q); got != want[q] {
					t.Errorf("%s, %s threads: %s:\ngot  %.300s\nwant %.300s", strat, threads, q, got, want[q])
				}
				db.Close()
			}
		}
	}
}

// referenceResults runs each of queries in a database over dir with the
// default settings and cache, and returns their results by query.
func referenceResults(t *testing.T, dir string, queries []string) map[string]string {
	t.Helper()
	ref, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want := map[string]string{}
	for _, q := range queries {
		want[q] = runSQL(t, ref.NewSession(), q)
	}
	return want
}
