package engine

import (
	"math"
	"path/filepath"
	"testing"
)

// f32Row is the schema of the table t32: a Parquet FLOAT column with NaN,
// −0.0, 0.0, the largest magnitudes and NULL.
type f32Row struct {
	K int64    `parquet:"k"`
	F *float32 `parquet:"f,optional"`
}

func float32DB(t *testing.T) *DB {
	t.Helper()
	dir := t.TempDir()
	vals := []float32{1.1, float32(math.Copysign(0, -1)), 0, float32(math.NaN()), 3.4e38, -2.5}
	var rows []f32Row
	for i := 0; i < 700; i++ {
		r := f32Row{K: int64(i % 7)}
		if j := i % 7; j < len(vals) {
			r.F = ptr(vals[j])
		}
		rows = append(rows, r)
	}
	writeParquet(t, filepath.Join(dir, "t32.parquet"), rows)
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestFloat32Queries runs queries over a FLOAT column with every GROUP BY
// strategy; the answers are DuckDB 1.5's over the same values.
func TestFloat32Queries(t *testing.T) {
	db := float32DB(t)
	tests := []sqlCase{
		{"DESCRIBE t32", "k,BIGINT;f,FLOAT"},
		{"SELECT typeof(f), typeof(f * 3), typeof(f * k), typeof(f * 3.5), typeof(f * 3.5e0), typeof(f / 2), typeof(-f), typeof(abs(f)), typeof(floor(f)) FROM t32 LIMIT 1",
			"FLOAT,FLOAT,FLOAT,FLOAT,DOUBLE,FLOAT,FLOAT,FLOAT,FLOAT"},
		{"SELECT typeof(sum(f)), typeof(avg(f)), typeof(min(f)), typeof(max(f)), typeof(sum(DISTINCT f)) FROM t32",
			"DOUBLE,DOUBLE,FLOAT,FLOAT,DOUBLE"},
		// FLOAT × INTEGER is FLOAT: the largest value times 3 overflows.
		{"SELECT max(f) * 3, CAST(max(f) AS VARCHAR), max(f) * 3e0 FROM t32 WHERE f < 1e39", "inf,3.4e+38,1.02e+39"},
		{"SELECT f * 3 FROM t32 WHERE k = 4 LIMIT 1", "inf"},
		{"SELECT CAST(f * 3 AS VARCHAR), CAST(f * 1.1 AS VARCHAR), CAST(f + 1e0 AS VARCHAR) FROM t32 WHERE k = 0 LIMIT 1",
			"3.3000002,1.21,2.100000023841858"},
		// NaN is one group, −0.0 and 0.0 another, NULL a third.
		{"SELECT count(*) FROM (SELECT f FROM t32 GROUP BY f) AS g", "6"},
		{"SELECT count(*) FROM (SELECT DISTINCT f FROM t32) AS g", "6"},
		{"SELECT count(DISTINCT f) FROM t32", "5"},
		{"SELECT count(*) AS c FROM t32 GROUP BY f ORDER BY c DESC LIMIT 1", "200"},
		{"SELECT f, count(*) FROM t32 WHERE f <> 0 GROUP BY f ORDER BY f NULLS FIRST", "-2.5,100;1.1,100;3.4e+38,100;nan,100"},
		{"SELECT f FROM t32 ORDER BY f DESC NULLS LAST LIMIT 1 OFFSET 100", "3.4e+38"},
		{"SELECT min(f), max(f), count(f) FROM t32", "-2.5,nan,600"},
		{"SELECT k, min(f), max(f) FROM t32 WHERE k IN (0, 5) GROUP BY k ORDER BY k", "0,1.1,1.1;5,-2.5,-2.5"},
		{"SELECT sum(f), avg(f) FROM t32 WHERE f < 2", "-140,-0.35"},
		{"SELECT count(*) FROM t32 WHERE f = 1.1", "100"}, // 1.1 as FLOAT
		{"SELECT count(*) FROM t32 WHERE f = 1.1e0", "0"}, // 1.1 as DOUBLE
		{"SELECT count(*) FROM t32 WHERE f IN (1.1, -2.5)", "200"},
		{"SELECT CAST(CAST(3.14 AS FLOAT) AS VARCHAR), CAST(3.14 AS REAL)", "3.14,3.14"},
		// sum(f + c) is not rewritten to sum(f) + c * count(f) for a FLOAT:
		// each f + 0.1 rounds to 1.2000000476837158.
		// (The sums are 120.00000476837158 and 120.0000023841858.)
		{"SELECT sum(f + 0.1) > 120.000004, sum(f + 0.1e0) < 120.000003, sum(f + 0.1e0) > 120.000002 FROM t32 WHERE k = 0", "true,true,true"},
	}
	runEveryStrategy(t, db, tests)
}
