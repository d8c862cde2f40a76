package engine

import (
	"context"
	"errors"
	"io"
)

// Options configures a DB.
type Options struct {
	// DataDir holds the tables: DIR/NAME.parquet is table NAME.
	DataDir string
	// CacheBytes bounds the memory of cached column vectors (0: 8 GiB).
	CacheBytes int64
	// QueryMemory bounds the memory one query may allocate for hash tables,
	// partitions and results (0: 8 GiB). A query over it fails cleanly.
	QueryMemory int64
}

// DB is a set of tables with a shared column cache. It is safe for
// concurrent use by many sessions.
type DB struct {
	opts Options
}

// Open returns a DB over opts.DataDir.
func Open(opts Options) (*DB, error) {
	return nil, errors.New("engine: not implemented yet")
}

// RegisterFile makes an in-memory Parquet file available as table name
// (used by the WebAssembly build, which has no file system).
func (db *DB) RegisterFile(name string, r io.ReaderAt, size int64) error {
	return errors.New("engine: not implemented yet")
}

// Settings are the per-session options changed with SET.
type Settings struct {
	GroupBy    string // naive, radix, parallel or auto
	Threads    int    // worker goroutines for parallel strategies
	RadixBits  int    // 0: derived from the cache sizes
	SumRewrite bool   // rewrite sum(x + c) to sum(x) + c*count(x)
}

// Session runs statements with its own settings. A Session is not safe for
// concurrent use; use one per notebook kernel session.
type Session struct {
	db       *DB
	settings Settings
}

// NewSession returns a session with default settings.
func (db *DB) NewSession() *Session {
	return &Session{db: db}
}

// Settings returns the session's current settings.
func (s *Session) Settings() Settings { return s.settings }

// Set changes one setting by name, as the SQL statement SET name = value.
func (s *Session) Set(name, value string) error {
	return errors.New("engine: not implemented yet")
}

// Exec parses and runs every ;-separated statement of src in order, stopping
// at the first error. Results of the statements that ran are returned along
// with the error. A *sql.Error carries the position of a syntax or binding
// error. Cancelling ctx stops the running statement between batches.
func (s *Session) Exec(ctx context.Context, src string, hooks *Hooks) ([]*Result, error) {
	return nil, errors.New("engine: not implemented yet")
}
