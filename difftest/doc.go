// Package difftest checks cachebook's SQL engine against DuckDB.
//
// It lives in its own Go module so that the main module stays free of cgo:
// DuckDB is linked through github.com/duckdb/duckdb-go/v2, which needs a C
// toolchain. The package provides the pieces of a differential test: running
// a query on DuckDB and on our engine, normalising both results into a
// common Table of plain Go values, and comparing them the way SQL defines
// equality of results (as multisets, or by position up to ties of the ORDER
// BY keys, with LIMIT and OFFSET applied to an ambiguous order).
//
// The tests in this package run the ClickBench queries and hand-made edge
// cases with every aggregation strategy; cmd/duckbench is DuckDB's side of
// `cachebook bench`.
package difftest
