package engine

import (
	"context"
	"errors"
	"path/filepath"
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
	res, err := db.NewSession().Exec(context.Background(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if last := res[len(res)-1]; last.Rows == 0 {
		t.Fatal("no groups after the panics")
	}
}
