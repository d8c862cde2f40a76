package difftest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// foreignTable is the table of the foreign-file matrix: every type DuckDB
// writes that our engine reads, with NULLs, UINTEGERs beyond 2^31 (which
// DuckDB writes as INT32 delta pages with 33-bit miniblocks in V2 files),
// repeated and unique strings. {N} is its row count.
const foreignTable = `SELECT i::BIGINT AS id,
	CASE WHEN i % 13 = 0 THEN NULL ELSE ((i * 7919) % 1000 - 500)::INTEGER END AS v,
	(i::BIGINT * 5000011 % 4294967296)::UINTEGER AS u,
	(i % 7 - 3)::SMALLINT AS small,
	CASE WHEN i % 11 = 0 THEN NULL ELSE ((i * 31) % 400) / 8.0 - 25 END AS f,
	(((i * 37) % 500) / 7.0 - 30)::FLOAT AS f4,
	DATE '2013-07-01' + (i % 61)::INTEGER AS d,
	TIMESTAMP '2013-07-01 00:00:00' + INTERVAL (i * 97) SECOND AS ts,
	'k' || (i % 101) AS s,
	CASE WHEN i % 7 = 0 THEN NULL ELSE 'unique-' || i END AS s2,
	CASE WHEN i % 23 = 0 THEN NULL ELSE i % 3 = 0 END AS b,
	((i - 500) * 0.25)::DECIMAL(9, 2) AS dec
	FROM range({N}) r(i)`

// foreignQueries are asked of every file, {T} its table.
var foreignQueries = []string{
	`SELECT count(*), count(v), sum(v), min(v), max(v), sum(u), min(u), max(u), sum(small), sum(id) FROM {T}`,
	`SELECT count(f), sum(f), min(f), max(f), min(f4), max(f4), min(d), max(d), min(ts), max(ts), sum(dec) FROM {T}`,
	`SELECT s, count(*), sum(v), min(u), max(s2) FROM {T} GROUP BY s ORDER BY s`,
	`SELECT b, count(*), count(s2), sum(f4) FROM {T} GROUP BY b ORDER BY b`,
	`SELECT id, v, u, f, d, ts, s, s2, b, dec FROM {T} WHERE id % 97 = 5 ORDER BY id`,
	`SELECT count(*), sum(v), count(DISTINCT s2) FROM {T} WHERE u > 2147483647 AND s2 LIKE '%3%'`,
	// Answered from the row groups' statistics, as DuckDB writes them.
	`SELECT min(v), max(v), min(u), max(u), min(small), max(small), min(d), max(d), min(id), max(id), count(*) FROM {T}`,
}

// TestForeignFiles reads files DuckDB writes with every codec it offers,
// Parquet versions V1 and V2, dictionaries on and off and row groups of
// 100, 4,096 and 1M rows (on a table of 10,000 rows, one row group) and, on
// a table of 300, of 1 row; every query of foreignQueries over every file
// must equal DuckDB's answer over the same file.
func TestForeignFiles(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	dir := t.TempDir()
	duck, err := OpenDuck(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	codecs := []string{"uncompressed", "snappy", "gzip", "zstd", "lz4", "lz4_raw", "brotli"}
	type file struct{ name, opts string }
	var files []file
	for _, codec := range codecs {
		for _, version := range []string{"V1", "V2"} {
			for _, dict := range []bool{true, false} {
				opts := fmt.Sprintf("COMPRESSION %s, PARQUET_VERSION %s", codec, version)
				name := fmt.Sprintf("%s_%s", codec, strings.ToLower(version))
				if !dict {
					opts += ", DICTIONARY_SIZE_LIMIT 0"
					name += "_plain"
				}
				for _, rg := range []int{1, 100, 4096, 1_000_000} {
					files = append(files, file{fmt.Sprintf("%s_rg%d", name, rg), fmt.Sprintf("%s, ROW_GROUP_SIZE %d", opts, rg)})
				}
			}
		}
	}
	for _, f := range files {
		rows := 10_000
		if strings.HasSuffix(f.name, "_rg1") {
			rows = 300
		}
		path := filepath.Join(dir, f.name+".parquet")
		q := fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, %s)",
			strings.ReplaceAll(foreignTable, "{N}", fmt.Sprint(rows)), SQLString(path), f.opts)
		if _, err := duck.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if err := CreateParquetView(ctx, duck, f.name, path); err != nil {
			t.Fatal(err)
		}
	}
	ours := openOurs(t, dir, "SELECT 1")
	defer ours.Close()
	equal, failed, notFromStats := 0, 0, 0
	for _, f := range files {
		for i, query := range foreignQueries {
			query = strings.ReplaceAll(query, "{T}", f.name)
			shape, err := ParseShape(query)
			if err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			refSQL, keys := shape.OrderedQuery()
			full, err := DuckQuery(ctx, duck, refSQL)
			if err != nil {
				t.Fatalf("DuckDB: %s: %v", refSQL, err)
			}
			ref, err := NewReference(shape, full, keys)
			if err != nil {
				t.Fatal(err)
			}
			got, err := OursQuery(ctx, ours.NewSession(), query)
			switch {
			case err != nil:
				t.Errorf("%s, query %d: %v", f.name, i, err)
				failed++
			case Compare(got, ref) != nil:
				t.Errorf("%s, query %d: %s\n%v", f.name, i, query, Compare(got, ref))
				failed++
			default:
				equal++
			}
		}
		// The last query comes from the statistics DuckDB wrote.
		last := strings.ReplaceAll(foreignQueries[len(foreignQueries)-1], "{T}", f.name)
		plan, err := OursQuery(ctx, ours.NewSession(), "EXPLAIN "+last)
		if err != nil {
			t.Fatalf("%s: EXPLAIN: %v", f.name, err)
		}
		if !strings.Contains(fmt.Sprint(plan), "answered from row-group statistics") {
			t.Errorf("%s: MIN/MAX not answered from the statistics DuckDB wrote:\n%v", f.name, plan)
			notFromStats++
		}
	}
	t.Logf("%d files × %d queries: %d equal to DuckDB, %d not (%v); %d files' MIN/MAX not from statistics", len(files), len(foreignQueries),
		equal, failed, time.Since(start).Round(time.Millisecond), notFromStats)
}

// TestForeignStatistics: MIN and MAX over a file DuckDB wrote with row
// groups of NULLs only (a column NULL in the first row group, a column
// NULL everywhere) come from the statistics and equal DuckDB's answer.
func TestForeignStatistics(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	duck, err := OpenDuck(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	path := filepath.Join(dir, "nullgroups.parquet")
	q := fmt.Sprintf(`COPY (SELECT i::BIGINT AS id,
		CASE WHEN i < 2048 THEN NULL ELSE (i - 5000)::INTEGER END AS late,
		NULL::INTEGER AS never,
		(i %% 300)::UINTEGER * 14000000 AS u,
		DATE '2013-07-01' + (i %% 61)::INTEGER AS d
		FROM range(6144) r(i)) TO %s (FORMAT parquet, ROW_GROUP_SIZE 2048)`, SQLString(path))
	if _, err := duck.ExecContext(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := CreateParquetView(ctx, duck, "nullgroups", path); err != nil {
		t.Fatal(err)
	}
	ours := openOurs(t, dir, "SELECT 1")
	defer ours.Close()
	for _, query := range []string{
		"SELECT min(late), max(late), min(never), max(never), count(*) FROM nullgroups",
		"SELECT min(u), max(u), min(d), max(d), min(id), max(id) FROM nullgroups",
	} {
		plan, err := OursQuery(ctx, ours.NewSession(), "EXPLAIN "+query)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fmt.Sprint(plan), "answered from row-group statistics (min_value, max_value) of 3 row groups") {
			t.Errorf("%s: not answered from the statistics of 3 row groups:\n%v", query, plan)
		}
		shape, err := ParseShape(query)
		if err != nil {
			t.Fatal(err)
		}
		refSQL, keys := shape.OrderedQuery()
		full, err := DuckQuery(ctx, duck, refSQL)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := NewReference(shape, full, keys)
		if err != nil {
			t.Fatal(err)
		}
		got, err := OursQuery(ctx, ours.NewSession(), query)
		if err != nil {
			t.Fatal(err)
		}
		if err := Compare(got, ref); err != nil {
			t.Errorf("%s: %v", query, err)
		}
	}
}
