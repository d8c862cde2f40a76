package difftest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	// The DuckDB driver registers itself as "duckdb".
	_ "github.com/duckdb/duckdb-go/v2"
)

// ToDateTimeMacro defines ClickHouse's toDateTime, which ClickBench's DuckDB
// queries use on the epoch-seconds EventTime column (as in ClickBench's
// duckdb-parquet/create.sql).
const ToDateTimeMacro = `CREATE OR REPLACE MACRO toDateTime(t) AS epoch_ms(t * 1000)`

// OpenDuck opens an in-memory DuckDB database limited to threads worker
// threads (0: DuckDB's default) and defines ToDateTimeMacro.
func OpenDuck(ctx context.Context, threads int) (*sql.DB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("duckdb: open: %w", err)
	}
	// One connection: settings and temporary objects stay visible to every
	// statement.
	db.SetMaxOpenConns(1)
	stmts := []string{ToDateTimeMacro}
	if threads > 0 {
		stmts = append(stmts, fmt.Sprintf("SET threads = %d", threads))
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			db.Close()
			return nil, fmt.Errorf("duckdb: %s: %w", s, err)
		}
	}
	return db, nil
}

// SQLString quotes s as an SQL string literal.
func SQLString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// SQLIdent quotes s as an SQL identifier.
func SQLIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// HitsSource is the SELECT that ClickBench's duckdb-parquet setup uses to
// read hits.parquet: strings from BYTE_ARRAY columns and EventDate from days
// since 1970 (a UINT16) to DATE.
func HitsSource(parquetPath string) string {
	return fmt.Sprintf("SELECT * REPLACE (make_date(EventDate) AS EventDate) FROM read_parquet(%s, binary_as_string=True)",
		SQLString(parquetPath))
}

// CreateHitsView defines view name over a ClickBench-layout Parquet file.
func CreateHitsView(ctx context.Context, db *sql.DB, name, parquetPath string) error {
	q := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS %s", SQLIdent(name), HitsSource(parquetPath))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("duckdb: create view %s: %w", name, err)
	}
	return nil
}

// CreateParquetView defines view name over a Parquet file as DuckDB reads it.
func CreateParquetView(ctx context.Context, db *sql.DB, name, parquetPath string) error {
	q := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM read_parquet(%s, binary_as_string=True)",
		SQLIdent(name), SQLString(parquetPath))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("duckdb: create view %s: %w", name, err)
	}
	return nil
}

// WriteParquet writes the result of a DuckDB query to a Parquet file.
func WriteParquet(ctx context.Context, db *sql.DB, query, path string) error {
	q := fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", query, SQLString(path))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("duckdb: write %s: %w", path, err)
	}
	return nil
}
