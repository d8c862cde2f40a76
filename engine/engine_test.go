package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"

	"cachebook/engine/agg"
	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// row is the schema of the test table t.
type row struct {
	K    int64   `parquet:"k"`
	G    string  `parquet:"g"`
	V    *int64  `parquet:"v,optional"`
	F    float64 `parquet:"f"`
	S    *string `parquet:"s,optional"`
	Neg  int32   `parquet:"neg"`
	Day  int32   `parquet:"day,date"`
	Zero int64   `parquet:"zero"`
}

func ptr[T any](v T) *T { return &v }

func testDB(t *testing.T) *DB {
	t.Helper()
	dir := t.TempDir()
	var rows []row
	for i := 0; i < 1000; i++ {
		r := row{K: int64(i % 10), G: fmt.Sprintf("g%d", i%3), F: float64(i) / 4, Neg: int32(i%7 - 3), Day: int32(15887 + i%31)}
		if i%5 != 0 {
			r.V = ptr(int64(i))
		}
		if i%4 != 0 {
			r.S = ptr(fmt.Sprintf("s%03d", i%50))
		}
		rows = append(rows, r)
	}
	writeParquet(t, filepath.Join(dir, "t.parquet"), rows)
	writeParquet(t, filepath.Join(dir, "empty.parquet"), []row{})
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func writeParquet[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, parquet.MaxRowsPerRowGroup(300))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// query runs src and renders the last result as "a,b;c,d" rows.
func runSQL(t *testing.T, s *Session, src string) string {
	t.Helper()
	res, err := s.Exec(context.Background(), src, nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	r := res[len(res)-1]
	return rowsString(r.Vecs, r.Rows)
}

// rowsString renders n rows of columns vs as "a,b;c,d".
func rowsString(vs []*vec.Vector, n int) string {
	rows := make([]string, n)
	for i := range rows {
		cells := make([]string, len(vs))
		for j, v := range vs {
			cells[j] = v.Format(i)
		}
		rows[i] = strings.Join(cells, ",")
	}
	return strings.Join(rows, ";")
}

func TestQueries(t *testing.T) {
	db := testDB(t)
	tests := []sqlCase{
		{"SELECT count(*) FROM t", "1000"},
		{"SELECT count(*) FROM empty", "0"},
		{"SELECT sum(v), count(v), min(v), max(v) FROM empty", "NULL,0,NULL,NULL"},
		{"SELECT count(v), count(s), count(DISTINCT s) FROM t", "800,750,50"},
		{"SELECT k, count(*) FROM t GROUP BY k ORDER BY k LIMIT 3", "0,100;1,100;2,100"},
		{"SELECT g, sum(k) AS s FROM t GROUP BY 1 ORDER BY s DESC, g", groupSums()},
		{"SELECT k FROM t WHERE v IS NULL GROUP BY k ORDER BY k", "0;5"},
		{"SELECT 7 / 2, 7 // 2, -7 % 3, 1 + 2 * 3", "3.5,3,-1,7"},
		{"SELECT count(*) FROM t WHERE s LIKE 's01%'", "150"},
		{"SELECT count(*) FROM t WHERE day >= '2013-07-30'", "64"},
		{"SELECT min(day), max(day) FROM t", "2013-07-01,2013-07-31"},
		{"SELECT k, count(*) c FROM t GROUP BY k HAVING count(*) > 99 AND k < 2 ORDER BY k", "0,100;1,100"},
		{"SELECT DISTINCT g FROM t ORDER BY g", "g0;g1;g2"},
		{"SELECT k FROM t ORDER BY k DESC, f LIMIT 2 OFFSET 1", "9;9"},
		{"SELECT count(*) FROM (SELECT k, count(*) AS c FROM t GROUP BY k) AS sub WHERE c = 100", "10"},
		{"SELECT s, count(*) FROM t WHERE k = 0 GROUP BY s ORDER BY s NULLS FIRST LIMIT 2", "NULL,50;s000,10"},
		{"SELECT avg(neg) FROM t", "-0.003"},
		{"SELECT k FROM t LIMIT 0", ""},
		{"SELECT k FROM t ORDER BY k LIMIT 2 OFFSET 5000", ""},
		{"SELECT sum(zero + 1), sum(zero + 2), sum(zero - 1) FROM t", "1000,2000,-1000"},
	}
	runEveryStrategy(t, db, tests)
}

// sqlCase is a query and its result as runSQL renders it.
type sqlCase struct{ sql, want string }

// runEveryStrategy runs every case with each GROUP BY strategy (2 threads,
// 8 partitions) and checks its result.
func runEveryStrategy(t *testing.T, db *DB, tests []sqlCase) {
	t.Helper()
	for _, strat := range []string{"naive", "radix", "parallel", "auto"} {
		s := db.NewSession()
		if err := s.Set("group_by", strat); err != nil {
			t.Fatal(err)
		}
		s.Set("threads", "2")
		s.Set("radix_bits", "3")
		for _, tc := range tests {
			if got := runSQL(t, s, tc.sql); got != tc.want {
				t.Errorf("%s: %s\n got  %q\n want %q", strat, tc.sql, got, tc.want)
			}
		}
	}
}

// groupSums computes the expected result of the GROUP BY g query directly.
func groupSums() string {
	sums := map[string]int{}
	for i := 0; i < 1000; i++ {
		sums[fmt.Sprintf("g%d", i%3)] += i % 10
	}
	type gs struct {
		g string
		s int
	}
	var all []gs
	for g, s := range sums {
		all = append(all, gs{g, s})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].s != all[j].s {
			return all[i].s > all[j].s
		}
		return all[i].g < all[j].g
	})
	var parts []string
	for _, x := range all {
		parts = append(parts, fmt.Sprintf("%s,%d", x.g, x.s))
	}
	return strings.Join(parts, ";")
}

func TestErrors(t *testing.T) {
	db := testDB(t)
	s := db.NewSession()
	tests := []struct{ sql, want string }{
		{"SELECT K2 FROM t", `did you mean "k"`},
		{"SELECT k, v FROM t GROUP BY k", `column "v" must appear in the GROUP BY clause`},
		{"SELECT * FROM nope", `table "nope" does not exist`},
		{"SELECT * FROM tt", `1:15: table "tt" does not exist; did you mean "t"?`},
		{"SELECT * FROM '../etc/passwd'", "passwd"},
		{"SET group_by = 'fast'", "group_by must be"},
		{"SET nonsense = 1", "unknown setting"},
		{"SELECT k FROM t LIMIT -1", "LIMIT"},
		{"SELECT k FROM t ORDER BY 3", "ORDER BY position 3"},
		{"SELECT sum(g) FROM t", "numeric"},
		{"SELECT count(*) FROM t WHERE count(*) > 1", "not allowed in WHERE"},
	}
	for _, tc := range tests {
		_, err := s.Exec(context.Background(), tc.sql, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want it to contain %q", tc.sql, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "storage:") {
			t.Errorf("%s: error %q shows the internal package name", tc.sql, err)
		}
	}
	_, err := s.Exec(context.Background(), "SELECT k,\n  nope FROM t", nil)
	var se *sql.Error
	if !errors.As(err, &se) || se.Pos.Line != 2 || se.Pos.Col != 3 {
		t.Fatalf("want a positioned error at 2:3, got %v", err)
	}
}

func TestMemoryLimit(t *testing.T) {
	db := testDB(t)
	s := db.NewSession()
	s.Set("memory_limit", "1KB")
	_, err := s.Exec(context.Background(), "SET group_by = 'naive'; SELECT v, count(*) FROM t GROUP BY v", nil)
	if !errors.Is(err, ErrMemoryLimit) || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("want a memory limit error, got %v", err)
	}
	if err := s.Set("memory_limit", "1TB"); err == nil {
		t.Fatal("memory_limit above the DB's QueryMemory was accepted")
	}
}

func TestCancel(t *testing.T) {
	db := testDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := db.NewSession().Exec(ctx, "SELECT k, count(*) FROM t GROUP BY k", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestExplainAnalyze(t *testing.T) {
	db := testDB(t)
	s := db.NewSession()
	s.Set("group_by", "parallel")
	s.Set("threads", "2")
	var mu sync.Mutex
	phases := map[string]bool{}
	hooks := &Hooks{PhaseEnd: func(w int, p string) {
		mu.Lock()
		phases[fmt.Sprint(w, " ", p)] = true
		mu.Unlock()
	}}
	got := runSQL(t, s, "EXPLAIN ANALYZE SELECT k, count(*) FROM t GROUP BY k")
	for _, want := range []string{"HASH_GROUP_BY", "phase partition", "phase aggregate", "worker 2", "parallel"} {
		if !strings.Contains(got, want) {
			t.Errorf("EXPLAIN ANALYZE lacks %q:\n%s", want, got)
		}
	}
	s2 := db.NewSession()
	s2.Set("group_by", "radix")
	got = runSQL(t, s2, "EXPLAIN ANALYZE SELECT v, count(*) FROM t GROUP BY v")
	if !strings.Contains(got, "partitions keep each table within half the L2 cache") {
		t.Errorf("radix_bits auto not explained:\n%s", got)
	}
	s2.Set("group_by", "auto")
	got = runSQL(t, s2, "EXPLAIN ANALYZE SELECT k, count(*) FROM t GROUP BY k")
	if !strings.Contains(got, "naive") || !strings.Contains(got, "within half the L3 cache") {
		t.Errorf("auto with 10 groups should pick naive and say why:\n%s", got)
	}
	if _, err := s.Exec(context.Background(), "SELECT k, count(*) FROM t GROUP BY k", hooks); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0 scan", "1 partition", "2 partition", "1 aggregate", "2 aggregate"} {
		if !phases[want] {
			t.Errorf("no PhaseEnd for %q; got %v", want, phases)
		}
	}
}

// TestExplainPreAggregate: a radix GROUP BY over a string key (the generic
// path) pre-aggregates by default and EXPLAIN ANALYZE says how many rows
// it folded into how many partial groups; SET pre_aggregate = false turns
// it off, and the answer is the same either way.
func TestExplainPreAggregate(t *testing.T) {
	db := testDB(t)
	s := db.NewSession()
	s.Set("group_by", "radix")
	const q = "SELECT g, count(*), sum(v), min(s), max(f) FROM t GROUP BY g ORDER BY g"
	got := runSQL(t, s, "EXPLAIN ANALYZE "+q)
	if !strings.Contains(got, "pre-aggregation: 1000 rows folded into 3 partial groups") {
		t.Errorf("EXPLAIN ANALYZE lacks the pre-aggregation line:\n%s", got)
	}
	on := runSQL(t, s, q)
	if err := s.Set("pre_aggregate", "false"); err != nil {
		t.Fatal(err)
	}
	if got := runSQL(t, s, "EXPLAIN ANALYZE "+q); strings.Contains(got, "pre-aggregation") {
		t.Errorf("pre_aggregate = false, yet:\n%s", got)
	}
	if off := runSQL(t, s, q); off != on {
		t.Errorf("with pre-aggregation %s, without %s", on, off)
	}
	if err := s.Reset("pre_aggregate"); err != nil || !s.Settings().PreAggregate {
		t.Errorf("RESET pre_aggregate: %v, setting %v", err, s.Settings().PreAggregate)
	}
	// A recording hook (the cache model's) replays radix with
	// pre-aggregation as the real run does, so the query keeps it.
	hooks := &Hooks{Aggregate: func(info AggregateInfo, src agg.Source) agg.Source {
		if info.Config.PreAggGroups < 0 {
			t.Errorf("the hook was handed a configuration with pre-aggregation off")
		}
		return src
	}}
	res, err := s.Exec(context.Background(), "EXPLAIN ANALYZE "+q, hooks)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for i := 0; i < res[0].Rows; i++ {
		plan = append(plan, res[0].Vecs[0].Format(i))
	}
	if got := strings.Join(plan, "\n"); !strings.Contains(got, "rows folded into") || strings.Contains(got, "recorded for the cache model") {
		t.Errorf("with a recording hook:\n%s", got)
	}
}

// TestExplainAnalyzeSubquery checks that an outer aggregate's figures land
// on its own node, not on the GROUP BY inside its subquery.
func TestExplainAnalyzeSubquery(t *testing.T) {
	s := testDB(t).NewSession()
	s.Set("group_by", "radix")
	got := runSQL(t, s, "EXPLAIN ANALYZE SELECT count(*) FROM (SELECT k, count(*) AS c FROM t GROUP BY k) AS g")
	lines := strings.Split(got, ";") // runSQL joins the plan's rows with ";"
	at := func(name string) int {
		for i, l := range lines {
			if strings.Contains(l, name) {
				return i
			}
		}
		t.Fatalf("no %s in:\n%s", name, got)
		return -1
	}
	outer, sub, inner := at("UNGROUPED_AGGREGATE"), at("SUBQUERY"), at("HASH_GROUP_BY")
	if !(outer < sub && sub < inner) {
		t.Fatalf("node order:\n%s", got)
	}
	if !strings.Contains(lines[outer], "(rows 1,") || !strings.Contains(lines[inner], "(rows 10,") {
		t.Errorf("row counts on the wrong nodes:\n%s", got)
	}
	one := strings.Join(lines[outer:sub], "\n")
	if !strings.Contains(one, "no GROUP BY keys") || strings.Contains(strings.Join(lines[inner:], "\n"), "no GROUP BY keys") {
		t.Errorf("the outer aggregate's strategy is not on its node:\n%s", got)
	}
	if !strings.Contains(strings.Join(lines[inner:], "\n"), "strategy: radix") {
		t.Errorf("the inner GROUP BY lost its strategy:\n%s", got)
	}
}
