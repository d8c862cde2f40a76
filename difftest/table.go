package difftest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"cachebook/engine/vec"
)

// Table is a query result with normalised values (see Normalize).
type Table struct {
	Columns []string
	Kinds   []Kind
	Types   []string // the engine's own type names, for messages
	Rows    [][]any
}

// DuckKind classifies a DuckDB type name as reported by
// database/sql.ColumnType.DatabaseTypeName.
func DuckKind(typeName string) Kind {
	t := strings.ToUpper(typeName)
	switch {
	case t == "BOOLEAN":
		return KindBool
	case strings.HasPrefix(t, "DECIMAL"):
		if strings.HasSuffix(t, ",0)") {
			return KindInteger
		}
		return KindFloat
	case strings.HasSuffix(t, "INT") || t == "UBIGINT" || t == "HUGEINT" || t == "UHUGEINT" ||
		t == "TINYINT" || t == "SMALLINT" || t == "INTEGER" || t == "BIGINT" ||
		t == "UTINYINT" || t == "USMALLINT" || t == "UINTEGER":
		return KindInteger
	case t == "FLOAT" || t == "DOUBLE" || t == "REAL":
		return KindFloat
	case t == "VARCHAR" || t == "BLOB" || strings.HasPrefix(t, "VARCHAR"):
		return KindString
	case t == "DATE" || strings.HasPrefix(t, "TIMESTAMP"):
		return KindTime
	}
	return KindOther
}

// OurKind classifies one of our engine's vector types.
func OurKind(t vec.Type) Kind {
	switch t {
	case vec.Bool:
		return KindBool
	case vec.Int16, vec.Int32, vec.Int64, vec.UInt64, vec.Interval:
		return KindInteger
	case vec.Float64:
		return KindFloat
	case vec.String:
		return KindString
	case vec.Date, vec.Timestamp, vec.TimestampNS:
		return KindTime
	}
	return KindOther
}

// Querier is the part of *sql.DB and *sql.Conn that DuckQuery needs.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// DuckQuery runs query on DuckDB and returns its normalised result.
func DuckQuery(ctx context.Context, db Querier, query string) (*Table, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("duckdb: column types: %w", err)
	}
	t := &Table{}
	for _, ct := range cts {
		t.Columns = append(t.Columns, ct.Name())
		t.Types = append(t.Types, ct.DatabaseTypeName())
		t.Kinds = append(t.Kinds, DuckKind(ct.DatabaseTypeName()))
	}
	for rows.Next() {
		vals := make([]any, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("duckdb: scan: %w", err)
		}
		for i, v := range vals {
			vals[i] = Normalize(v)
		}
		t.Rows = append(t.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	return t, nil
}

// FromVectors converts one of our engine's results (engine.Result's
// Columns, Vecs and Rows) into a Table.
func FromVectors(cols []vec.Column, vecs []*vec.Vector, nrows int) (*Table, error) {
	if len(cols) != len(vecs) {
		return nil, fmt.Errorf("cachebook: %d columns but %d vectors", len(cols), len(vecs))
	}
	t := &Table{}
	for i, c := range cols {
		t.Columns = append(t.Columns, c.Name)
		t.Types = append(t.Types, c.Type.String())
		t.Kinds = append(t.Kinds, OurKind(c.Type))
		if v := vecs[i]; v == nil || (v.Type != vec.Null && v.Len < nrows) {
			return nil, fmt.Errorf("cachebook: column %q has fewer than %d values", c.Name, nrows)
		}
	}
	for i := 0; i < nrows; i++ {
		row := make([]any, len(vecs))
		for c, v := range vecs {
			if v.Type == vec.Null {
				continue // the NULL literal's vector may carry no payload
			}
			row[c] = Normalize(v.Value(i))
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}
