// Package gentest provides a small generated hits table for the tests of
// packages built on the engine, made once per test binary.
package gentest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"cachebook/engine/gen"
)

// Rows is the number of rows in the table HitsDir generates.
const Rows = 20000

// shared is the one directory of a test binary; generating it once keeps
// tests that each need data from paying for it each time.
var shared struct {
	once sync.Once
	dir  string
	err  error
}

// HitsDir returns a directory holding hits.parquet with Rows shuffled rows
// (seed 1), generating it on the first call. Call Cleanup from TestMain
// after the tests have run.
func HitsDir(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "cachebook-hits-*")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		shared.err = gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"), gen.Options{Rows: Rows, Seed: 1})
	})
	if shared.err != nil {
		t.Fatalf("generate test data: %v", shared.err)
	}
	return shared.dir
}

// Cleanup removes the directory HitsDir made, if it made one.
func Cleanup() {
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}
