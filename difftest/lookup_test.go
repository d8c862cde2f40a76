package difftest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen"
)

// lookupMorsel is the rows of our engine's scan morsel (engine.morselRows):
// the lookup keys are picked so that their matches fall in different
// morsels of a row group, where a morsel without a match next to one with
// matches once lost its columns.
const lookupMorsel = 16384

// lookupTableQuery produces the lookup tables' 120,000 rows: key columns whose
// values each match a known number of rows (uniq once, scattered; run4
// four adjacent rows; k3 three rows 40,000 apart; k50 50 and k400 400
// rows spread over the table; burst once but for -7, which matches 6,000
// adjacent rows, above the scan's few-matches cut of one row in eight of a
// 40,960-row group; even, every other integer, so that an
// odd value matches nothing though min/max keep its row group; user two
// rows of a ClickBench-sized UserID), and other columns of every kind a
// lookup selects.
const lookupTableQuery = `SELECT i::BIGINT AS id,
	((i * 7919) % 120000)::BIGINT AS uniq,
	(i // 4)::INTEGER AS run4,
	((i * 7919) % 40000)::BIGINT AS k3,
	((i * 7919) % 2400)::INTEGER AS k50,
	((i * 7919) % 300)::INTEGER AS k400,
	CASE WHEN i BETWEEN 50000 AND 55999 THEN -7 ELSE i END::INTEGER AS burst,
	(i * 2)::BIGINT AS even,
	-4985258886753678896 + ((i * 7919) % 60000) * 1000003 AS "user",
	CASE WHEN i % 11 = 0 THEN NULL WHEN i % 11 = 1 THEN '' ELSE 'http://example.com/p' || i || repeat('x', (i % 13)::INTEGER) END AS url,
	((i * 31) % 4000) / 8.0 - 250 AS num,
	CASE WHEN i % 9 = 0 THEN NULL ELSE (i % 1000 - 500)::INTEGER END AS v,
	TIMESTAMP '2013-07-01 00:00:00' + INTERVAL (i * 37) SECOND AS ts,
	DATE '2013-07-01' + (i % 61)::INTEGER AS d,
	i % 3 = 0 AS b
	FROM range(120000) r(i)`

// lookupTables are the lookup tables: the same rows in row groups of
// several morsels, and in many row groups of one morsel each.
var lookupTables = []struct {
	name     string
	rowGroup int
	keys     int // keys picked per column
}{
	{"lk", 40_000, 3},
	{"lks", 4_096, 2},
}

// lookupColumns are the key columns looked up in every lookup table, and
// the most rows a picked key may match (0: any number; url's empty string
// matches thousands, which burst covers).
var lookupColumns = []struct {
	name   string
	string bool
	most   int
}{
	{"uniq", false, 0}, {"run4", false, 0}, {"k3", false, 0}, {"k50", false, 0}, {"k400", false, 0},
	{"burst", false, 0}, {"even", false, 0}, {"user", false, 0}, {"url", true, 1000},
}

// lookup is a WHERE clause on one table and the rows DuckDB says it
// matches.
type lookup struct {
	table, where string
	matches      int // rows matching
	groups       int // row groups holding them
}

// lookupForms are the SELECTs each lookup is run in, over hits or over a
// lookup table: other columns of every kind, without and with ORDER BY and
// LIMIT, aggregated and grouped. The first %s is the table, the second the
// WHERE clause.
func lookupForms(hits bool) []string {
	if hits {
		return []string{
			"SELECT URL, EventTime FROM %s WHERE %s",
			"SELECT URL, EventTime, Title FROM %s WHERE %s ORDER BY EventTime, URL",
			"SELECT SearchPhrase, EventDate, ResolutionWidth FROM %s WHERE %s ORDER BY EventDate DESC LIMIT 3",
			"SELECT URL, RegionID FROM %s WHERE %s LIMIT 2",
			"SELECT count(*), min(URL), max(EventTime), sum(ResolutionWidth) FROM %s WHERE %s",
			"SELECT RegionID, count(*), max(URL) FROM %s WHERE %s GROUP BY RegionID",
		}
	}
	return []string{
		"SELECT url, num, ts, id FROM %s WHERE %s",
		"SELECT url, v, d, ts FROM %s WHERE %s ORDER BY ts",
		"SELECT id, url, b FROM %s WHERE %s ORDER BY id DESC LIMIT 3",
		"SELECT url, num FROM %s WHERE %s LIMIT 2",
		"SELECT count(*), min(url), max(ts), sum(num), count(v) FROM %s WHERE %s",
		"SELECT b, count(*), max(url), min(d) FROM %s WHERE %s GROUP BY b",
	}
}

// lookupSettings are every GROUP BY strategy at one and two threads.
func lookupSettings() []strategy {
	var ss []strategy
	for _, g := range []string{"naive", "radix", "parallel", "auto"} {
		for _, th := range []int{1, 2} {
			ss = append(ss, strategy{fmt.Sprintf("%s/%d", g, th), fmt.Sprintf("SET group_by = '%s'; SET threads = %d", g, th)})
		}
	}
	return ss
}

// numberRows defines DuckDB table name as the rows of the Parquet file at
// path with, for each, the row group it lies in (g) and the morsel of that
// row group (morsel), from the file's own row groups (parquet_metadata)
// and rows numbered as the file stores them.
func numberRows(ctx context.Context, duck *sql.DB, name, path string) error {
	p := SQLString(path)
	q := fmt.Sprintf(`CREATE OR REPLACE TEMP TABLE %[1]s AS
	WITH rg AS (SELECT DISTINCT row_group_id AS g, row_group_num_rows AS n FROM parquet_metadata(%[2]s)),
	b AS (SELECT g, sum(n) OVER (ORDER BY g) - n AS lo, sum(n) OVER (ORDER BY g) AS hi FROM rg)
	SELECT r.*, b.g, (r.file_row_number - b.lo) // %[3]d AS morsel
	FROM read_parquet(%[2]s, binary_as_string=True, file_row_number=True) r
	JOIN b ON r.file_row_number >= b.lo AND r.file_row_number < b.hi`, SQLIdent(name), p, lookupMorsel)
	if _, err := duck.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("duckdb: numbering the rows of %s: %w", path, err)
	}
	return nil
}

// pickKeys picks up to max values of column col of numbered (a table
// numberRows made of table's file) that match at most most rows (0: any
// number), one per kind of lookup: by the rows the value matches, the row
// groups they lie in and the morsel of its row group the first lies in;
// a value matching once comes first, then the most frequent value.
func pickKeys(ctx context.Context, duck *sql.DB, table, numbered, col string, isString bool, max, most int) ([]lookup, error) {
	limit := ""
	if most > 0 {
		limit = fmt.Sprintf("HAVING count(*) <= %d", most)
	}
	q := fmt.Sprintf(`WITH m AS (SELECT %[1]s AS k, count(*) AS c, count(DISTINCT g) AS ng, arg_min(morsel, file_row_number) AS morsel
		FROM %[2]s WHERE %[1]s IS NOT NULL GROUP BY k %[3]s),
	kinds AS (SELECT k, c, ng, morsel, row_number() OVER (PARTITION BY c, ng, morsel ORDER BY hash(k)) AS nth,
		max(c) OVER () AS top FROM m WHERE true QUALIFY nth = 1),
	pick AS (SELECT *, row_number() OVER (PARTITION BY c = 1 ORDER BY hash(c, ng, morsel)) AS rk FROM kinds)
	SELECT k::VARCHAR, c, ng FROM pick
	ORDER BY CASE WHEN c = 1 AND rk = 1 THEN 0 WHEN c = top THEN 1 ELSE 2 END, hash(c, ng, morsel) LIMIT %[4]d`,
		SQLIdent(col), SQLIdent(numbered), limit, max)
	res, err := DuckQuery(ctx, duck, q)
	if err != nil {
		return nil, fmt.Errorf("picking keys of %s.%s: %w", table, col, err)
	}
	var ls []lookup
	for _, r := range res.Rows {
		k, _ := r[0].(string)
		lit := k
		if isString {
			lit = SQLString(k)
		}
		c, _ := floatOf(r[1])
		ng, _ := floatOf(r[2])
		ls = append(ls, lookup{table: table, where: SQLIdent(col) + " = " + lit, matches: int(c), groups: int(ng)})
	}
	return ls, nil
}

// lookupEnv writes the lookup tables and a generated hits table, loads
// them into DuckDB, and returns the lookups on them.
func lookupEnv(t *testing.T) (*sql.DB, *engine.DB, []lookup) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	duck, err := OpenDuck(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	var lookups []lookup
	for _, tb := range lookupTables {
		path := filepath.Join(dir, tb.name+".parquet")
		q := fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, ROW_GROUP_SIZE %d)", lookupTableQuery, SQLString(path), tb.rowGroup)
		if _, err := duck.ExecContext(ctx, q); err != nil {
			t.Fatalf("duckdb: write %s: %v", path, err)
		}
		q = fmt.Sprintf("CREATE OR REPLACE TABLE %s AS SELECT * FROM read_parquet(%s)", SQLIdent(tb.name), SQLString(path))
		if _, err := duck.ExecContext(ctx, q); err != nil {
			t.Fatalf("duckdb: load %s: %v", path, err)
		}
		if err := numberRows(ctx, duck, "numbered_"+tb.name, path); err != nil {
			t.Fatal(err)
		}
		for _, c := range lookupColumns {
			ls, err := pickKeys(ctx, duck, tb.name, "numbered_"+tb.name, c.name, c.string, tb.keys, c.most)
			if err != nil {
				t.Fatal(err)
			}
			lookups = append(lookups, ls...)
		}
		// No match: an odd value inside a row group's min/max, a value
		// outside every row group's; and several keys at once.
		for _, w := range []string{"even = 100001", "uniq = -1", "uniq IN (5, 60000, 119999, 77)", "k50 = 7 AND url <> ''"} {
			lookups = append(lookups, lookup{table: tb.name, where: w, matches: -1})
		}
	}
	hits := filepath.Join(dir, "hits.parquet")
	// Row groups of 20,000 rows: a morsel and a part.
	if err := gen.WriteFile(ctx, hits, gen.Options{Rows: 60_000, Order: "shuffled", Seed: 1, RowGroupRows: 20_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := duck.ExecContext(ctx, "CREATE OR REPLACE TABLE hits AS "+HitsSource(hits)); err != nil {
		t.Fatalf("duckdb: load %s: %v", hits, err)
	}
	if err := numberRows(ctx, duck, "numbered_hits", hits); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		isString bool
	}{{"UserID", false}, {"SearchPhrase", true}} {
		ls, err := pickKeys(ctx, duck, "hits", "numbered_hits", c.name, c.isString, 3, 1000)
		if err != nil {
			t.Fatal(err)
		}
		lookups = append(lookups, ls...)
	}
	ours, err := engine.Open(engine.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("engine.Open: %v", err)
	}
	// The row groups are as intended: several morsels each in lk and hits,
	// many in lks.
	for _, tb := range []struct {
		name  string
		least int
	}{{"lk", 3}, {"lks", 20}, {"hits", 3}} {
		got, err := DuckQuery(ctx, duck, fmt.Sprintf("SELECT count(DISTINCT row_group_id), max(row_group_num_rows) FROM parquet_metadata(%s)",
			SQLString(filepath.Join(dir, tb.name+".parquet"))))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := floatOf(got.Rows[0][0])
		most, _ := floatOf(got.Rows[0][1])
		if int(n) < tb.least {
			t.Fatalf("%s has %v row groups (largest %v rows), want at least %d", tb.name, n, most, tb.least)
		}
		t.Logf("%s: %v row groups of up to %v rows", tb.name, n, most)
	}
	return duck, ours, lookups
}

// TestLookups compares selective lookups with DuckDB: WHERE on a key that
// matches no row, one, a few, 50, hundreds or thousands, in one row group
// or several, in row groups of several morsels (where the scan reads the
// other columns page by page for the morsels with matches) and of one,
// with strings, numbers, dates and timestamps selected, with and without
// ORDER BY and LIMIT, aggregated and grouped, with every strategy at one
// and two threads. The keys are picked from the data, so that each
// lookup's match count is known; the issue 32 lookup, a UserID present
// once on generated hits, is among them.
func TestLookups(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	duck, ours, lookups := lookupEnv(t)
	t.Logf("tables written and keys picked in %v", time.Since(start).Round(time.Millisecond))
	settings := lookupSettings()
	start = time.Now()
	var queries, runs, failed int
	byMatches := map[string]int{}
	for _, lk := range lookups {
		n, err := DuckQuery(ctx, duck, fmt.Sprintf("SELECT count(*), count(DISTINCT g) FROM numbered_%s WHERE %s", lk.table, lk.where))
		if err != nil {
			t.Fatal(err)
		}
		c, _ := floatOf(n.Rows[0][0])
		ng, _ := floatOf(n.Rows[0][1])
		if lk.matches >= 0 && (int(c) != lk.matches || int(ng) != lk.groups) {
			t.Fatalf("%s WHERE %s: DuckDB counts %v rows in %v row groups, the pick %d in %d", lk.table, lk.where, c, ng, lk.matches, lk.groups)
		}
		lk.matches, lk.groups = int(c), int(ng)
		byMatches[matchBucket(lk.matches)]++
		if testing.Verbose() {
			t.Logf("%s WHERE %s: %d rows in %d row groups", lk.table, lk.where, lk.matches, lk.groups)
		}
		for _, form := range lookupForms(lk.table == "hits") {
			q := fmt.Sprintf(form, SQLIdent(lk.table), lk.where)
			queries++
			shape, err := ParseShape(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			refSQL, keys := shape.OrderedQuery()
			full, err := DuckQuery(ctx, duck, refSQL)
			if err != nil {
				t.Fatalf("reference query %s: %v", refSQL, err)
			}
			ref, err := NewReference(shape, full, keys)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range settings {
				runs++
				got, err := OursQuery(ctx, ours.NewSession(), st.set+"; "+q)
				var fail string
				switch {
				case err != nil:
					fail = "error: " + err.Error()
				default:
					if m := Compare(got, ref); m != nil {
						fail = "mismatch: " + m.Error()
					}
				}
				if fail == "" {
					continue
				}
				if failed++; failed <= 20 {
					t.Errorf("[%s] %s (%d matching rows in %d row groups)\n%s", st.name, q, lk.matches, lk.groups, fail)
				}
			}
		}
	}
	if failed > 20 {
		t.Errorf("%d of %d runs failed; the first 20 are shown", failed, runs)
	}
	var buckets []string
	for b, n := range byMatches {
		buckets = append(buckets, fmt.Sprintf("%s: %d", b, n))
	}
	sort.Strings(buckets)
	t.Logf("%d lookups (%s) × %d forms = %d queries, each on DuckDB and with %d settings: %d runs of ours in %v",
		len(lookups), strings.Join(buckets, ", "), len(lookupForms(false)), queries, len(settings), runs, time.Since(start).Round(time.Millisecond))
}

// matchBucket names the size class of a lookup's match count.
func matchBucket(n int) string {
	switch {
	case n == 0:
		return "0 rows"
	case n == 1:
		return "1 row"
	case n <= 10:
		return "2-10 rows"
	case n <= 100:
		return "11-100 rows"
	case n <= 1000:
		return "101-1000 rows"
	}
	return "over 1000 rows"
}
