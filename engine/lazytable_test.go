package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"cachebook/engine/gen"
)

// hitsBuilder returns a TableBuilder that registers a small generated
// hits file as name, counting its calls and the memory limits it got.
func hitsBuilder(t *testing.T, name string, calls *atomic.Int32, limits chan<- int64) TableBuilder {
	return func(ctx context.Context, db *DB, memoryLimit int64) (string, error) {
		calls.Add(1)
		if limits != nil {
			limits <- memoryLimit
		}
		var buf bytes.Buffer
		if err := gen.Write(ctx, &buf, gen.Options{Rows: 1000, Seed: 1}); err != nil {
			return "", err
		}
		if err := db.RegisterFile(name, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
			return "", err
		}
		// A builder may query the table it registered (to warm it up).
		if _, err := db.NewSession().Exec(ctx, "SELECT count(*) FROM "+name, nil); err != nil {
			return "", err
		}
		return name + ": 1000 generated rows", nil
	}
}

// TestLazyTable: a table registered with RegisterBuilder is built the
// first time a statement names it (in any case, in FROM, a subquery,
// DESCRIBE or EXPLAIN), once for all the sessions of the DB, with the
// naming session's memory limit; every statement naming it carries the
// builder's note, and statements that do not name it carry none.
func TestLazyTable(t *testing.T) {
	db, err := Open(Options{QueryMemory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	limits := make(chan int64, 10)
	if !db.RegisterBuilder("lazy", hitsBuilder(t, "lazy", &calls, limits)) {
		t.Fatal("RegisterBuilder refused the first builder")
	}
	if db.RegisterBuilder("LAZY", hitsBuilder(t, "lazy", &calls, nil)) {
		t.Error("RegisterBuilder took a second builder for the same name")
	}
	ctx := context.Background()
	s := db.NewSession()
	res, err := s.Exec(ctx, "SELECT 1; SHOW TABLES", nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 || res[1].Rows != 0 || len(res[0].Notes) != 0 {
		t.Fatalf("statements not naming the table built it (%d calls, %d tables, notes %q)", calls.Load(), res[1].Rows, res[0].Notes)
	}
	var wg sync.WaitGroup
	for _, q := range []string{"SELECT count(*) FROM lazy", "SELECT count(*) FROM (SELECT * FROM LAZY) t"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss := db.NewSession()
			if err := ss.Set("memory_limit", "256MiB"); err != nil {
				t.Error(err)
				return
			}
			res, err := ss.Exec(ctx, q, nil)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				return
			}
			if got := res[0].Vecs[0].Format(0); got != "1000" {
				t.Errorf("%s = %s, want 1000", q, got)
			}
		}()
	}
	wg.Wait()
	for _, q := range []string{"DESCRIBE lazy", "EXPLAIN SELECT * FROM Lazy", "SELECT count(*) FROM lazy"} {
		res, err := s.Exec(ctx, q, nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(res[0].Notes) != 1 || res[0].Notes[0] != "lazy: 1000 generated rows" {
			t.Errorf("%s: notes %q, want the builder's", q, res[0].Notes)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the builder ran %d times, want once", n)
	}
	if l := <-limits; l != 256<<20 {
		t.Errorf("the builder got memory limit %d, want the naming session's %d", l, 256<<20)
	}
	if notes, err := s.Resolve(ctx, "SELECT 1; SELECT * FROM lazy"); err != nil || len(notes) != 1 {
		t.Errorf("Resolve: %q, %v; want the builder's note", notes, err)
	}
	if notes, err := s.Resolve(ctx, "SELECT 'FROM lazy' FROM hits; SELEC"); err != nil || len(notes) != 0 {
		t.Errorf("Resolve of text that names no lazy table or does not parse: %q, %v", notes, err)
	}
	if _, err := s.Exec(ctx, "SELECT * FROM lazzy", nil); err == nil || !strings.Contains(err.Error(), `did you mean "lazy"`) {
		t.Errorf("a misspelt name: %v, want a hint at the lazy table", err)
	}
}

// TestLazyTableFailure: a builder's error fails the statement, keeps its
// cause (cancellation, the memory limit) for errors.Is, and the next
// statement naming the table tries again; a statement waiting for a
// build stops when its context is done.
func TestLazyTableFailure(t *testing.T) {
	db, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	ok := hitsBuilder(t, "flaky", &calls, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	db.RegisterBuilder("flaky", func(ctx context.Context, db *DB, memoryLimit int64) (string, error) {
		switch calls.Load() {
		case 0:
			calls.Add(1)
			return "", ErrMemoryLimit
		case 1:
			calls.Add(1)
			close(started)
			<-release
			return "", ctx.Err()
		}
		return ok(ctx, db, memoryLimit)
	})
	s := db.NewSession()
	if _, err := s.Exec(context.Background(), "SELECT * FROM flaky", nil); !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("first build: %v, want the memory limit", err)
	}
	bctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := db.NewSession().Exec(bctx, "SELECT * FROM flaky", nil)
		done <- err
	}()
	<-started
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan error, 1)
	go func() {
		_, err := db.NewSession().Exec(wctx, "SELECT * FROM flaky", nil)
		wdone <- err
	}()
	wcancel()
	if err := <-wdone; !errors.Is(err, context.Canceled) {
		t.Errorf("a statement waiting for the build, cancelled: %v", err)
	}
	cancel()
	close(release)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("an interrupted build: %v, want context.Canceled", err)
	}
	res, err := s.Exec(context.Background(), "SELECT count(*) FROM flaky", nil)
	if err != nil || res[0].Vecs[0].Format(0) != "1000" {
		t.Fatalf("third try: %v", err)
	}
}
