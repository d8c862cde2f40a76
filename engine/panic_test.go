package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/gen"
)

// TestWorkerPanic injects a panic on a worker goroutine of the parallel
// GROUP BY (through the phase hook, which runs on the worker): the
// statement must fail with the panic as its error, and the process and the
// database must go on answering.
func TestWorkerPanic(t *testing.T) {
	dir := t.TempDir()
	if err := gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"), gen.Options{Rows: 20000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const q = "SET group_by = 'parallel'; SET threads = 2; SELECT IsRefresh, count(nullif(AdvEngineID, 48)) FROM hits GROUP BY IsRefresh"
	for _, phase := range []string{"partition", "aggregate"} {
		hooks := &Hooks{PhaseStart: func(w int, p string) {
			if w == 2 && p == phase {
				panic("injected in " + p)
			}
		}}
		_, err := db.NewSession().Exec(context.Background(), q, hooks)
		var pe *agg.PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: err = %v, want an *agg.PanicError", phase, err)
		}
		t.Log(err)
	}
	// With one thread the aggregation runs on the statement's goroutine,
	// on its OS thread, locked as the kernel's counters lock it: a panic
	// there reaches the statement.
	const q1 = "SET group_by = 'radix'; SET threads = 1; SELECT count(*), sum(c) FROM (SELECT URL, count(*) AS c FROM hits GROUP BY URL) AS t"
	for _, phase := range []string{"partition", "aggregate"} {
		hooks := &Hooks{LockThreads: true, PhaseStart: func(w int, p string) {
			if w == 0 && p == phase {
				panic("injected in " + p)
			}
		}}
		_, err := db.NewSession().Exec(context.Background(), q1, hooks)
		if err == nil || !strings.Contains(err.Error(), "injected in "+phase) {
			t.Fatalf("one thread, %s: err = %v, want the injected panic", phase, err)
		}
		t.Log(err)
	}
	for _, src := range []string{q, q1} {
		res, err := db.NewSession().Exec(context.Background(), src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if last := res[len(res)-1]; last.Rows == 0 {
			t.Fatal("no groups after the panics")
		}
	}
}
