package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// smallRow is the schema of the table test(a INT, b INT) of DuckDB's
// test_distinct.test, with NULLs and a UBIGINT column added.
type smallRow struct {
	A *int32  `parquet:"a,optional"`
	B int32   `parquet:"b"`
	U *uint64 `parquet:"u,optional"`
}

func smallDB(t *testing.T) *DB {
	t.Helper()
	dir := t.TempDir()
	rows := []smallRow{
		{A: ptr(int32(11)), B: 22, U: ptr(uint64(1) << 63)},
		{A: ptr(int32(13)), B: 22, U: ptr(uint64(1)<<63 + 1)},
		{A: ptr(int32(11)), B: 21, U: ptr(uint64(5))},
		{A: ptr(int32(11)), B: 22},
		{B: 20, U: ptr(^uint64(0))},
	}
	writeParquet(t, filepath.Join(dir, "test.parquet"), rows)
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestIssue32 checks the answers issue 32 found wrong or refused, each
// against DuckDB's answer.
func TestIssue32(t *testing.T) {
	db := smallDB(t)
	tests := []sqlCase{
		// SELECT DISTINCT over a GROUP BY.
		{"SELECT DISTINCT a FROM test WHERE a IS NOT NULL GROUP BY a, b ORDER BY a", "11;13"},
		{"SELECT DISTINCT MAX(b) FROM test WHERE a IS NOT NULL GROUP BY a", "22"},
		{"SELECT DISTINCT count(*) FROM test", "5"},
		{"SELECT DISTINCT b % 2, count(*) > 0 FROM test GROUP BY b ORDER BY 1", "0,true;1,true"},
		{"SELECT DISTINCT a FROM test GROUP BY a, b ORDER BY a NULLS FIRST", "NULL;11;13"},
		{"SELECT count(*) FROM (SELECT DISTINCT max(b) AS m FROM test GROUP BY a)", "2"},
		// default_null_order and NULLS FIRST/LAST.
		{"SELECT a FROM test GROUP BY a ORDER BY a", "11;13;NULL"},
		{"SET default_null_order = 'nulls_first'; SELECT a FROM test GROUP BY a ORDER BY a", "NULL;11;13"},
		{"SET default_null_order = 'nulls_first'; SELECT a FROM test GROUP BY a ORDER BY a DESC", "NULL;13;11"},
		{"SET default_null_order = 'nulls_first'; SELECT a FROM test GROUP BY a ORDER BY a NULLS LAST", "11;13;NULL"},
		{"SET default_null_order = 'nulls_first_on_asc_last_on_desc'; SELECT a FROM test GROUP BY a ORDER BY a DESC", "13;11;NULL"},
		{"SET default_null_order = 'nulls_last_on_asc_first_on_desc'; SELECT a FROM test GROUP BY a ORDER BY a DESC", "NULL;13;11"},
		{"SET default_null_order = 'postgres'; SELECT a FROM test GROUP BY a ORDER BY a", "11;13;NULL"},
		{"SET default_null_order = 'nulls_first'; RESET default_null_order; SELECT a FROM test GROUP BY a ORDER BY a", "11;13;NULL"},
	}
	for _, tc := range tests {
		if got := runSQL(t, db.NewSession(), tc.sql); got != tc.want {
			t.Errorf("%s\n got  %q\n want %q", tc.sql, got, tc.want)
		}
	}
}

// TestDistinctStep checks that SELECT DISTINCT over a GROUP BY is a step
// of the plan, shown by EXPLAIN.
func TestDistinctStep(t *testing.T) {
	db := smallDB(t)
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"EXPLAIN SELECT DISTINCT a FROM test GROUP BY a, b", true},
		{"EXPLAIN SELECT DISTINCT max(b) FROM test", true},
		{"EXPLAIN SELECT a FROM test GROUP BY a, b", false},
		{"EXPLAIN SELECT DISTINCT a FROM test", false}, // DISTINCT is the GROUP BY itself
	} {
		plan := runSQL(t, db.NewSession(), tc.sql)
		if got := strings.Contains(plan, "DISTINCT"); got != tc.want {
			t.Errorf("%s: DISTINCT step %v, want %v:\n%s", tc.sql, got, tc.want, plan)
		}
	}
}

// TestIssue32Errors checks the errors of queries DuckDB refuses too.
func TestIssue32Errors(t *testing.T) {
	db := smallDB(t)
	for _, tc := range []struct{ sql, want string }{
		{"SELECT DISTINCT a FROM test GROUP BY a, b ORDER BY b", "ORDER BY expressions must appear in the select list"},
		{"SET default_null_order = 'middle'", "default_null_order must be"},
	} {
		_, err := db.NewSession().Exec(context.Background(), tc.sql, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}
