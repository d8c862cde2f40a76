package difftest

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen"
)

var (
	update = flag.Bool("update", false, "rewrite RESULTS.md from this run")
	strict = flag.Bool("strict", false, "fail when a case listed in testdata/known_failures.txt passes")
	rows   = flag.Int("rows", 100_000, "rows of each generated hits.parquet (-short: 20000)")
)

// strategy is one way of running a query on our engine.
type strategy struct {
	name, set string
}

var strategies = []strategy{
	{"naive", "SET group_by = 'naive'"},
	{"radix", "SET group_by = 'radix'"},
	{"parallel", "SET group_by = 'parallel'; SET threads = 2"},
	{"auto", "SET group_by = 'auto'"},
}

// outcome is the result of one case on one data set with one strategy.
type outcome struct {
	status string // "match", "mismatch", "error", "duckdb error"
	detail string
	notes  []string
}

// recorder collects outcomes for RESULTS.md.
type recorder struct {
	mu    sync.Mutex
	order []string
	sql   map[string]string
	res   map[string]map[string]map[string]outcome // case → data set → strategy
}

var results = &recorder{sql: map[string]string{}, res: map[string]map[string]map[string]outcome{}}

func (r *recorder) add(id, query, dataset, strat string, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.res[id]; !ok {
		r.order = append(r.order, id)
		r.sql[id] = query
		r.res[id] = map[string]map[string]outcome{}
	}
	if r.res[id][dataset] == nil {
		r.res[id][dataset] = map[string]outcome{}
	}
	r.res[id][dataset][strat] = o
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if *update && code == 0 {
		if err := writeResults("RESULTS.md"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// knownFailures reads testdata/known_failures.txt: lines "<case> <reason>".
func knownFailures(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/known_failures.txt")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		known[id] = strings.TrimSpace(reason)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return known
}

// clickBenchFile holds the 43 ClickBench queries, one per line, verbatim;
// the parser's tests read the same file.
const clickBenchFile = "../engine/sql/testdata/clickbench.sql"

// readQueries returns the ClickBench queries, one per line.
func readQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(clickBenchFile)
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			qs = append(qs, l)
		}
	}
	return qs
}

// openOurs opens our engine over dir and checks that it answers probe.
func openOurs(t *testing.T, dir, probe string) *engine.DB {
	t.Helper()
	db, err := engine.Open(engine.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("engine.Open: %v", err)
	}
	if _, err := db.NewSession().Exec(context.Background(), probe, nil); err != nil {
		t.Fatalf("%s: %v", probe, err)
	}
	return db
}

// hitsPair generates a hits table of opts in a temporary directory and
// opens it in DuckDB (a view hits over the file, 2 threads; closed when
// the test ends) and in the engine. It returns the directory too.
func hitsPair(t *testing.T, opts gen.Options) (dir string, duck *sql.DB, ours *engine.DB) {
	t.Helper()
	ctx := context.Background()
	dir = t.TempDir()
	path := filepath.Join(dir, "hits.parquet")
	if err := gen.WriteFile(ctx, path, opts); err != nil {
		t.Fatal(err)
	}
	duck, err := OpenDuck(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	if err := CreateHitsView(ctx, duck, "hits", path); err != nil {
		t.Fatal(err)
	}
	return dir, duck, openOurs(t, dir, "SELECT COUNT(*) FROM hits")
}

// diffCase is one query to compare on one data set.
type diffCase struct {
	id, query string
}

// runCases compares every case with every strategy, on our engine over
// ours and on DuckDB over duck (which must define the same tables). When
// ours is nil only DuckDB's reference results are computed, and each case is
// skipped.
func runCases(t *testing.T, dataset string, duck *sql.DB, ours *engine.DB, cases []diffCase,
	known map[string]string) {
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			shape, err := ParseShape(c.query)
			if err != nil {
				t.Fatalf("%s: %v", c.query, err)
			}
			refSQL, keys := shape.OrderedQuery()
			refStart := time.Now()
			full, err := DuckQuery(ctx, duck, refSQL)
			if err != nil {
				results.add(c.id, c.query, dataset, "duckdb", outcome{status: "duckdb error", detail: err.Error()})
				t.Fatalf("reference query %s: %v", refSQL, err)
			}
			ref, err := NewReference(shape, full, keys)
			if err != nil {
				t.Fatal(err)
			}
			results.add(c.id, c.query, dataset, "duckdb", outcome{status: "reference",
				detail: fmt.Sprint(len(ref.Expected()))})
			t.Logf("[duckdb] %d rows, %d in the full reference (%v)", len(ref.Expected()), len(full.Rows),
				time.Since(refStart).Round(time.Millisecond))
			if ours == nil {
				t.Skipf("DuckDB: %d rows; our engine not run", len(ref.Expected()))
			}
			var failures []string
			for _, st := range strategies {
				start := time.Now()
				got, err := OursQuery(ctx, ours.NewSession(), st.set+"; "+c.query)
				o := outcome{status: "match"}
				switch {
				case err != nil:
					o = outcome{status: "error", detail: err.Error()}
				default:
					o.notes = TypeNotes(got, ref)
					if m := Compare(got, ref); m != nil {
						o = outcome{status: "mismatch", detail: m.Error(), notes: o.notes}
					}
				}
				results.add(c.id, c.query, dataset, st.name, o)
				if o.status != "match" {
					failures = append(failures, fmt.Sprintf("[%s, %s] %s: %s", dataset, st.name, o.status, o.detail))
				} else {
					t.Logf("[%s] %d rows match (%v)", st.name, len(got.Rows), time.Since(start).Round(time.Millisecond))
				}
			}
			reason, isKnown := known[c.id]
			switch {
			case len(failures) > 0 && isKnown:
				t.Skipf("known failure (%s):\n%s\n%s", reason, c.query, strings.Join(failures, "\n"))
			case len(failures) > 0:
				t.Errorf("%s\n%s", c.query, strings.Join(failures, "\n"))
			case isKnown && *strict:
				t.Errorf("listed in known_failures.txt (%s) but matches: remove it", reason)
			case isKnown:
				t.Logf("listed in known_failures.txt (%s) but matches now", reason)
			}
		})
	}
}

// TestClickBench runs the ClickBench queries on generated hits data, in
// shuffled and clustered row order, with every strategy.
func TestClickBench(t *testing.T) {
	queries := readQueries(t)
	if len(queries) != 43 {
		t.Fatalf("%s has %d queries, want 43", clickBenchFile, len(queries))
	}
	known := knownFailures(t)
	ctx := context.Background()
	n := *rows
	if testing.Short() {
		n = min(n, 20_000)
	}
	for _, order := range []string{"shuffled", "clustered"} {
		t.Run(order, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "hits.parquet")
			start := time.Now()
			if err := gen.WriteFile(ctx, path, gen.Options{Rows: n, Order: order, Seed: 1}); err != nil {
				t.Fatal(err)
			}
			t.Logf("generated %d rows in %v", n, time.Since(start).Round(time.Millisecond))
			duck, err := OpenDuck(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer duck.Close()
			if err := CreateHitsView(ctx, duck, "hits", path); err != nil {
				t.Fatal(err)
			}
			ours := openOurs(t, dir, "SELECT COUNT(*) FROM hits")
			cases := make([]diffCase, len(queries))
			for i, q := range queries {
				cases[i] = diffCase{id: fmt.Sprintf("Q%02d", i), query: q}
			}
			cases = append(cases, scaledQueries(t, queries)...)
			runCases(t, order, duck, ours, cases, known)
		})
	}
}

// scaledQueries returns variants of the ClickBench queries whose HAVING
// threshold or OFFSET leaves no rows on a few hundred thousand rows of
// generated data, scaled down so that they return rows.
func scaledQueries(t *testing.T, queries []string) []diffCase {
	t.Helper()
	scale := []struct {
		q         int
		old, repl string
	}{
		{27, "HAVING COUNT(*) > 100000", "HAVING COUNT(*) > 1000"},
		{28, "HAVING COUNT(*) > 100000", "HAVING COUNT(*) > 1000"},
		{38, "OFFSET 1000", "OFFSET 10"},
		{41, "OFFSET 10000", "OFFSET 100"},
		{42, "OFFSET 1000", "OFFSET 100"},
	}
	var cases []diffCase
	for _, sc := range scale {
		q := queries[sc.q]
		if !strings.Contains(q, sc.old) {
			t.Fatalf("Q%02d has no %q", sc.q, sc.old)
		}
		cases = append(cases, diffCase{id: fmt.Sprintf("Q%02d-scaled", sc.q), query: strings.Replace(q, sc.old, sc.repl, 1)})
	}
	return cases
}

// edgeTables are small tables written by DuckDB to Parquet, as
// name → SELECT producing its rows.
var edgeTables = []struct{ name, query string }{
	{"t", `SELECT * FROM (VALUES
		(1, 'a', 10, 1.5, 1),
		(1, 'a', NULL, 2.5, 1),
		(2, '', 20, NULL, 1),
		(2, NULL, -5, -1.25, 2),
		(NULL, 'b', 7, 0.0, 2),
		(NULL, NULL, NULL, NULL, 2),
		(3, 'c', 0, 3.0, 3),
		(3, 'ccc', 100, 1e10, 3),
		(3, '', -100, -1e-3, 3),
		(4, 'a', NULL, NULL, 4),
		(5, 'é', 3, 0.1, 4),
		(5, 'é', 4, 0.2, 4)
	) v(k, s, v, d, g)`},
	{"empty", `SELECT * FROM t WHERE false`},
	{"one", `SELECT 7::INTEGER AS g, i::BIGINT AS v FROM range(1000) r(i)`},
	{"distinct_keys", `SELECT i::BIGINT AS id, (i % 7)::INTEGER AS m, 'k' || i AS s FROM range(5000) r(i)`},
	{"ties", `SELECT (i % 10)::INTEGER AS k, (i % 3)::INTEGER AS w FROM range(30 + 2) r(i)`},
	{"neg", `SELECT * FROM (VALUES (7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (-1, 5), (1, -5), (-9, 3), (9, -4))
		v(a, b)`},
	{"bigvals", `SELECT * FROM (VALUES (1, 9000000000000000000), (1, 9000000000000000000), (2, -9000000000000000000),
		(2, -9000000000000000000), (3, 9223372036854775807)) v(g, x)`},
	{"dates", `SELECT DATE '2013-07-01' + (i % 31)::INTEGER AS d,
		TIMESTAMP '2013-07-01 00:00:00' + INTERVAL (i * 37) MINUTE AS ts, (i % 4)::SMALLINT AS g FROM range(500) r(i)`},
}

// edgeCases are queries over edgeTables, each aimed at one SQL rule.
var edgeCases = []diffCase{
	{"null_key_int", "SELECT k, COUNT(*), COUNT(v), SUM(v), MIN(v), MAX(v), AVG(v) FROM t GROUP BY k"},
	{"null_key_str", "SELECT s, COUNT(*), COUNT(s), MIN(k), MAX(d) FROM t GROUP BY s"},
	{"null_two_keys", "SELECT k, s, COUNT(*), SUM(g) FROM t GROUP BY k, s"},
	{"null_agg_inputs", "SELECT g, SUM(v), AVG(d), MIN(s), MAX(s), COUNT(v) FROM t GROUP BY g"},
	{"empty_string_eq", "SELECT COUNT(*) FROM t WHERE s = ''"},
	{"empty_string_ne", "SELECT COUNT(*) FROM t WHERE s <> ''"},
	{"is_null", "SELECT COUNT(*), SUM(g) FROM t WHERE s IS NULL"},
	{"empty_global", "SELECT COUNT(*), COUNT(v), SUM(v), MIN(s), MAX(d), AVG(v) FROM empty"},
	{"empty_group", "SELECT k, COUNT(*) FROM empty GROUP BY k"},
	{"empty_count_distinct", "SELECT COUNT(DISTINCT k) FROM empty"},
	{"empty_order_limit", "SELECT k, COUNT(*) AS c FROM empty GROUP BY k ORDER BY c DESC LIMIT 10"},
	{"one_group", "SELECT g, COUNT(*), SUM(v), AVG(v), MIN(v), MAX(v) FROM one GROUP BY g"},
	{"one_group_no_key", "SELECT COUNT(*), SUM(v), COUNT(DISTINCT g) FROM one"},
	{"all_distinct", "SELECT id, COUNT(*), SUM(m) FROM distinct_keys GROUP BY id"},
	{"all_distinct_str", "SELECT s, COUNT(*) FROM distinct_keys GROUP BY s"},
	{"all_distinct_top", "SELECT id, COUNT(*) AS c FROM distinct_keys GROUP BY id ORDER BY c DESC LIMIT 5"},
	{"ties_limit", "SELECT k, COUNT(*) AS c FROM ties GROUP BY k ORDER BY c DESC LIMIT 4"},
	{"ties_limit_offset", "SELECT k, COUNT(*) AS c FROM ties GROUP BY k ORDER BY c DESC LIMIT 3 OFFSET 2"},
	{"ties_rows_limit", "SELECT k, w FROM ties ORDER BY w LIMIT 7"},
	{"int_division", "SELECT a, b, a / b, a % b FROM neg"},
	{"int_division_op", "SELECT a, b, a // b FROM neg"},
	{"division_by_zero", "SELECT a, a / (b - b), a % (b - b) FROM neg"},
	{"negative_sums", "SELECT SUM(a), SUM(b), MIN(a), MAX(b), AVG(a) FROM neg"},
	{"avg_ints", "SELECT g, AVG(g), AVG(k), AVG(v) FROM t GROUP BY g"},
	{"avg_global", "SELECT AVG(id), AVG(m) FROM distinct_keys"},
	{"count_distinct_nulls", "SELECT COUNT(DISTINCT k), COUNT(DISTINCT s), COUNT(DISTINCT v) FROM t"},
	{"count_distinct_grouped", "SELECT g, COUNT(DISTINCT s), COUNT(DISTINCT k) FROM t GROUP BY g"},
	{"having", "SELECT k, COUNT(*) AS c FROM t GROUP BY k HAVING COUNT(*) > 1"},
	{"having_other_aggs", "SELECT s, SUM(v) FROM t GROUP BY s HAVING SUM(v) IS NOT NULL AND MIN(g) >= 1"},
	{"order_ordinals", "SELECT k, COUNT(*) FROM t GROUP BY k ORDER BY 2 DESC, 1"},
	{"order_aliases", "SELECT k AS key, SUM(v) AS total FROM t GROUP BY key ORDER BY total DESC, key"},
	{"order_aggregate_expr", "SELECT k, COUNT(*) FROM t GROUP BY k ORDER BY COUNT(*) DESC, k DESC"},
	{"order_nulls_asc", "SELECT v FROM t ORDER BY v LIMIT 20"},
	{"order_nulls_desc", "SELECT s FROM t ORDER BY s DESC"},
	{"group_by_ordinals", "SELECT s IS NULL, s = '', COUNT(*) FROM t GROUP BY 1, 2"},
	{"offset_beyond_end", "SELECT k FROM t GROUP BY k ORDER BY k LIMIT 10 OFFSET 1000"},
	{"offset_beyond_end_unordered", "SELECT k, COUNT(*) FROM t GROUP BY k LIMIT 5 OFFSET 100"},
	{"limit_zero", "SELECT k FROM t LIMIT 0"},
	{"min_max_strings", "SELECT MIN(s), MAX(s) FROM t"},
	{"sum_beyond_int64", "SELECT g, SUM(x) FROM bigvals GROUP BY g"},
	{"sum_beyond_int64_global", "SELECT SUM(x), MIN(x), MAX(x) FROM bigvals"},
	{"where_ne_skips_null", "SELECT COUNT(*) FROM t WHERE k <> 1"},
	{"in_list_with_null", "SELECT COUNT(*) FROM t WHERE k IN (1, NULL)"},
	{"not_in_list_with_null", "SELECT COUNT(*) FROM t WHERE k NOT IN (1, NULL)"},
	{"case_with_nulls", "SELECT k, CASE WHEN v > 5 THEN 'big' WHEN v IS NULL THEN 'none' ELSE 'small' END AS c FROM t"},
	{"like_patterns", "SELECT s, s LIKE '_', s LIKE 'c%', s NOT LIKE '%c' FROM t"},
	{"group_by_alias_expr", "SELECT k % 2 AS parity, COUNT(*), SUM(v) FROM t GROUP BY parity"},
	{"dates_min_max", "SELECT MIN(d), MAX(d), MIN(ts), MAX(ts) FROM dates"},
	{"dates_group", "SELECT d, COUNT(*), MIN(ts) FROM dates WHERE d >= '2013-07-10' AND d <= '2013-07-20' GROUP BY d"},
	{"timestamp_trunc_order", "SELECT DATE_TRUNC('hour', ts) AS h, COUNT(*) FROM dates GROUP BY h ORDER BY h LIMIT 5 OFFSET 3"},
	{"extract_minute", "SELECT extract(minute FROM ts) AS m, COUNT(*) AS c FROM dates GROUP BY m ORDER BY c DESC, m LIMIT 5"},
	{"two_small_int_keys", "SELECT g, d, COUNT(*) FROM dates GROUP BY g, d"},
	// GROUP BY keys the planner does not hash: constants, keys computed
	// from column keys, repeats.
	{"const_key", "SELECT 1, k, COUNT(*) FROM t GROUP BY 1, k"},
	{"const_keys_only", "SELECT 1, 'x', COUNT(*), SUM(v) FROM t GROUP BY 1, 2"},
	{"const_keys_only_empty", "SELECT 1, 'x', COUNT(*), SUM(v) FROM empty GROUP BY 1, 2"},
	{"const_key_empty", "SELECT 1, k, COUNT(*) FROM empty GROUP BY 1, k"},
	{"const_key_none_pass", "SELECT 1, COUNT(*) FROM t WHERE k > 100 GROUP BY 1"},
	{"derived_keys_null", "SELECT k, k - 1, k - 2, k * 3, COUNT(*) FROM t GROUP BY k, k - 1, k - 2, k * 3"},
	{"derived_key_order", "SELECT v, v - 1 AS w, COUNT(*) AS c FROM t GROUP BY v, v - 1 ORDER BY w DESC NULLS LAST LIMIT 4"},
	{"derived_key_having", "SELECT k, COUNT(*) FROM t GROUP BY k, k * 2 HAVING k * 2 > 4"},
	{"derived_two_keys", "SELECT k, g, k + g, COUNT(*) FROM t GROUP BY k, g, k + g"},
	{"derived_string_key", "SELECT s, upper(s), length(s), COUNT(*) FROM t GROUP BY s, upper(s), length(s)"},
	{"derived_date_key", "SELECT d, year(d), COUNT(*) FROM dates GROUP BY d, year(d)"},
	{"repeated_key", "SELECT k, COUNT(*) FROM t GROUP BY k, k"},
	{"distinct_derived", "SELECT DISTINCT k, k + 1 FROM t"},
}

// TestEdgeCases runs hand-made queries on small tables with every strategy.
func TestEdgeCases(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	duck, err := OpenDuck(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	for _, tb := range edgeTables {
		// Earlier tables are visible to later ones by their view.
		path := filepath.Join(dir, tb.name+".parquet")
		if err := WriteParquet(ctx, duck, tb.query, path); err != nil {
			t.Fatal(err)
		}
		if err := CreateParquetView(ctx, duck, tb.name, path); err != nil {
			t.Fatal(err)
		}
	}
	ours := openOurs(t, dir, "SELECT COUNT(*) FROM t")
	ids := map[string]bool{}
	for _, c := range edgeCases {
		if ids[c.id] {
			t.Fatalf("duplicate case %s", c.id)
		}
		ids[c.id] = true
	}
	cases := slices.Clone(edgeCases)
	for i := range cases {
		cases[i].id = "edge/" + cases[i].id
	}
	runCases(t, "edge", duck, ours, cases, knownFailures(t))
}

// OursQuery runs src (SET statements followed by one query) on sess and
// returns the normalised result of its last statement.
func OursQuery(ctx context.Context, sess *engine.Session, src string) (*Table, error) {
	res, err := sess.Exec(ctx, src, nil)
	if err != nil {
		return nil, fmt.Errorf("cachebook: %w", err)
	}
	if len(res) == 0 {
		return nil, errors.New("cachebook: no result")
	}
	last := res[len(res)-1]
	return FromVectors(last.Columns, last.Vecs, last.Rows)
}
