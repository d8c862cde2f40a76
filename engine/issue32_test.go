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
		// round with any negative digits, exact for integers.
		{"SELECT round(53, -19), round(53, -1), round(55, -1), round(-55, -1), round(-54, -1)", "0,50,60,-60,-50"},
		{"SELECT round(9007199254740993, -1), round(4000000000000000000, -19), round(53, -400)", "9007199254740990,0,0"},
		{"SELECT round(42::DOUBLE, -23), round(42.5::DOUBLE, -1), round(45::DOUBLE, -1), round(1e300, -400), round(42::DOUBLE, 400)", "0,40,50,0,42"},
		{"SELECT round(u, -1) FROM test WHERE u = 9223372036854775809", "9223372036854775810"},
		{"SELECT round(1.5::FLOAT, -1), round(-0.5, 0), round(2.5)", "0,-1,3"},
		// Decimal literals and integers beyond BIGINT are exact.
		{"SELECT 12345678901234567890 % 123, 12345678901111111 % 2.0, 10.0 % 0.0, 5 % 0", "78,1,NULL,NULL"},
		{"SELECT 0.1 + 0.2 = 0.3, 0.1 * 3 = 0.3, 0.3 - 0.1 = 0.2, 1.5 = 3 / 2, 0.1::DOUBLE + 0.2 = 0.3", "true,true,true,true,false"},
		{"SELECT 0.1 + 0.2, 2.5 % -1.5, -2.5 % 1.5, -(0.1 + 0.2) = -0.3", "0.3,1,-1,true"},
		{"SELECT 12345678901234567890 - 20000000000000000000, -9223372036854775808, typeof(-9223372036854775808)", "-7654321098765432110,-9223372036854775808,BIGINT"},
		{"SELECT 100000000000000000000000 > 99999999999999999999999, 18446744073709551616 > 18446744073709551615", "true,true"},
		{"SELECT 1.0 / 0.0, 1.0 / 3.0 = 1 / 3", "inf,true"},
		// Unsigned comparisons are exact for every literal.
		{"SELECT 9223372036854775809 = 9223372036854775808, 9223372036854775809 > 9223372036854775808", "false,true"},
		{"SELECT count(*) FROM test WHERE u = 9223372036854775809", "1"},
		{"SELECT count(*) FROM test WHERE u = 9223372036854775808", "1"},
		{"SELECT count(*) FROM test WHERE u > 9223372036854775808", "2"},
		{"SELECT count(*) FROM test WHERE 9223372036854775808 < u", "2"},
		{"SELECT count(*) FROM test WHERE u >= 9223372036854775808.5", "2"},
		{"SELECT count(*) FROM test WHERE u > -1", "4"},
		{"SELECT count(*) FROM test WHERE u < -1 OR u = -1", "0"},
		{"SELECT count(*) FROM test WHERE u <> -1", "4"},
		{"SELECT count(*) FROM test WHERE u = 18446744073709551615", "1"},
		{"SELECT count(*) FROM test WHERE u < 18446744073709551616", "4"},
		{"SELECT count(*) FROM test WHERE u IN (9223372036854775809, 5)", "2"},
		{"SELECT count(*) FROM test WHERE u IN (-1, 5)", "1"},
		{"SELECT count(*) FROM test WHERE a < 11.5", "3"},
		{"SELECT count(*) FROM test WHERE a = 11.0", "3"},
		{"SELECT count(*) FROM test WHERE a = 11.5 OR a > 9223372036854775808 OR b < -9223372036854775809", "0"},
		{"SELECT count(*) FROM test WHERE a <= 12.9 AND a >= 10.1", "3"},
		// Qualified column names and table names in any case.
		{"SELECT test.a FROM test WHERE test.a IS NOT NULL GROUP BY a ORDER BY test.a", "11;13"},
		{"SELECT a, count(*) FROM TEST GROUP BY Test.a ORDER BY a", "11,3;13,1;NULL,1"},
		{"SELECT t.b FROM test AS t WHERE t.b < 22 ORDER BY 1", "20;21"},
		{"SELECT test.* FROM Test WHERE b = 20", "NULL,20,18446744073709551615"},
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
		{"SELECT DISTINCT a FROM test GROUP BY a, b ORDER BY b", "not in the SELECT DISTINCT list, is not supported"},
		{"SET default_null_order = 'middle'", "default_null_order must be"},
		{"SELECT x.a FROM test", `table "x" is not in the FROM clause`},
		{"SELECT round(18446744073709551615, -1)", "out of range"},
		{"SELECT round(9223372036854775807, -1)", "out of range"},
	} {
		_, err := db.NewSession().Exec(context.Background(), tc.sql, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}
