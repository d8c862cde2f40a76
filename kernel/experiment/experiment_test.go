package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/kernel/internal/memtest"
	"cachebook/kernel/param"
	"cachebook/kernel/perf"
)

func TestCatalogIsFreshAndComplete(t *testing.T) {
	a, b := Catalog(), Catalog()
	want := []string{"false-sharing", "branches", "lock-contention", "parallel-merge", "zeroing", "sum-rewrite",
		"mlp", "stride", "associativity", "c2c", "substring", "page-reuse", "transpose"}
	if len(a) != len(want) {
		t.Fatalf("Catalog has %d specs, want %d", len(a), len(want))
	}
	for i, s := range a {
		if s.Name != want[i] {
			t.Errorf("spec %d is %q, want %q", i, s.Name, want[i])
		}
		if s.Summary == "" || (s.Run == nil) == (s.RunData == nil) || len(s.Params) == 0 {
			t.Errorf("%s: incomplete spec", s.Name)
		}
		for _, p := range s.Params {
			if p.Name == "" || p.Default == "" || p.Help == "" {
				t.Errorf("%s: undocumented parameter %+v", s.Name, p)
			}
		}
	}
	a[0].Name = "changed"
	a[0].Params[0].Default = "changed"
	if b[0].Name == "changed" || Catalog()[0].Params[0].Default == "changed" {
		t.Error("Catalog shares state between calls")
	}
	if _, err := Lookup("no-such"); err == nil || !strings.Contains(err.Error(), "false-sharing") {
		t.Errorf("Lookup(no-such) = %v, want an error listing the experiments", err)
	}
}

// runSpec runs experiment name with params on a background context.
func runSpec(t *testing.T, name string, params map[string]string, hooks *Hooks) (*Result, error) {
	t.Helper()
	s, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(engine.Options{}) // no tables
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), s, params, Options{Hooks: hooks, DB: db})
}

func TestParamValidation(t *testing.T) {
	tests := []struct {
		exp    string
		params map[string]string
		want   string
	}{
		{"false-sharing", map[string]string{"threads": "0"}, "threads must be between 1 and 256, got 0"},
		{"false-sharing", map[string]string{"threads": "300"}, "threads must be between 1 and 256, got 300"},
		{"false-sharing", map[string]string{"threads": "two"}, `threads must be an integer, got "two"`},
		{"false-sharing", map[string]string{"modes": "atomic,weird"}, `modes must list atomic and/or plain, got "weird"`},
		{"false-sharing", map[string]string{"modes": " , "}, "modes must list"},
		{"false-sharing", map[string]string{"thread": "2"}, "unknown parameter thread"},
		{"false-sharing", map[string]string{"iterations": "-5"}, "iterations must be between 0"},
		{"false-sharing", map[string]string{"duration": "soon"}, `duration must be a duration such as 100ms, got "soon"`},
		{"false-sharing", map[string]string{"duration": "2h"}, "duration must be between 1ms and 1m0s, got 2h0m0s"},
		{"lock-contention", map[string]string{"writes": "1.5"}, "writes must be between 0 and 1, got 1.5"},
		{"lock-contention", map[string]string{"writes": "NaN"}, "writes must be a number"},
		{"lock-contention", map[string]string{"variants": "spinlock"}, `variants must be among mutex, rwmutex, snapshot, sharded, per-thread, got "spinlock"`},
		{"lock-contention", map[string]string{"shards": "0"}, "shards must be between 1 and 4096, got 0"},
		{"parallel-merge", map[string]string{"buckets": "100"}, "buckets must be a power of two, got 100"},
		{"parallel-merge", map[string]string{"rows": "0"}, "rows must be between 1"},
		{"zeroing", map[string]string{"size": "8XB"}, `size: want a size such as 512MB`},
		{"zeroing", map[string]string{"size": "1KiB"}, "size must be between 4KiB and 1GiB, got 1KiB"},
		{"zeroing", map[string]string{"touch": "-0.1"}, "touch must be between 0 and 1"},
		{"zeroing", map[string]string{"variants": "calloc"}, `variants must be among make, pool, pool-clear, mmap, got "calloc"`},
		{"sum-rewrite", map[string]string{"terms": "0"}, "terms must be between 1 and 1000, got 0"},
		{"sum-rewrite", map[string]string{"data": t.TempDir()}, "unknown parameter data"},
	}
	for _, tt := range tests {
		t.Run(tt.exp+"/"+tt.want, func(t *testing.T) {
			res, err := runSpec(t, tt.exp, tt.params, nil)
			if err == nil {
				t.Fatalf("no error, result %+v", res)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, s := range Catalog() {
		if s.Name == "sum-rewrite" || s.Name == "substring" {
			continue // needs a data set; it cancels inside the engine
		}
		_, err := Run(ctx, s, nil, Options{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s on a cancelled context: %v, want context.Canceled", s.Name, err)
		}
	}
}

// checkResult verifies the common shape of a result: tables, JSON, text.
func checkResult(t *testing.T, r *Result) {
	t.Helper()
	if len(r.Tables) == 0 || len(r.Tables[0].Rows) == 0 || r.Data == nil {
		t.Fatalf("%s: empty result %+v", r.Experiment, r)
	}
	for _, tb := range r.Tables {
		for _, row := range tb.Rows {
			if len(row) != len(tb.Columns) {
				t.Errorf("%s: row %v has %d cells for %d columns", r.Experiment, row, len(row), len(tb.Columns))
			}
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("%s: result is not JSON-serialisable: %v", r.Experiment, err)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), r.Tables[0].Columns[0]) {
		t.Errorf("%s: text output lacks the table:\n%s", r.Experiment, b.String())
	}
}

func TestHooksSeeEveryWorker(t *testing.T) {
	var started, stopped, runs int
	var mu = make(chan struct{}, 1)
	lock := func() func() { mu <- struct{}{}; return func() { <-mu } }
	hooks := &Hooks{
		RunStart:    func(string, int) { defer lock()(); runs++ },
		WorkerStart: func(int) { defer lock()(); started++ },
		WorkerStop:  func(int) { defer lock()(); stopped++ },
	}
	_, err := runSpec(t, "false-sharing", map[string]string{"threads": "3", "iterations": "10", "reps": "1", "modes": "atomic"}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	// 3 layouts x 1 rep, 3 workers each.
	if runs != 3 || started != 9 || stopped != 9 {
		t.Errorf("hooks saw %d runs, %d starts, %d stops; want 3, 9, 9", runs, started, stopped)
	}
}

func TestThreadSteps(t *testing.T) {
	for n, want := range map[int]string{1: "[1]", 2: "[1 2]", 4: "[1 2 4]", 6: "[1 2 4 6]"} {
		if got := fmt.Sprint(threadSteps(n)); got != want {
			t.Errorf("threadSteps(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestRunWithCounters(t *testing.T) {
	s, err := Lookup("false-sharing")
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunWithCounters(context.Background(), s,
		map[string]string{"threads": "2", "iterations": "1000", "reps": "2", "modes": "plain"}, perf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	if len(r.Counters) != 3*2 { // 3 layouts x 2 reps
		t.Fatalf("%d counter reports, want 6", len(r.Counters))
	}
	for _, c := range r.Counters {
		if c.Label == "" || c.Report == nil {
			t.Errorf("empty counter run %+v", c)
			continue
		}
		if n := len(c.Report.Workers); n != 2 {
			t.Errorf("%s: report has %d workers, want 2", c.Label, n)
		}
	}
	last := r.Tables[len(r.Tables)-1]
	if len(last.Rows) != 6 || !strings.Contains(last.Title, "counters") {
		t.Errorf("counter table %+v", last)
	}
}

// TestMemoryLimit: parameters whose estimate exceeds the per-cell limit are
// refused before anything is allocated (the measured heap barely moves),
// and the estimates cover what a real run takes.
func TestMemoryLimit(t *testing.T) {
	const limit = 256 << 20
	for _, c := range []struct {
		exp string
		raw map[string]string
	}{
		{"zeroing", map[string]string{"size": "1GiB", "live": "8", "threads": "2"}},
		{"parallel-merge", map[string]string{"rows": "17179869184", "groups": "17179869184"}},
		{"parallel-merge", map[string]string{"rows": "1e9", "groups": "1e8", "threads": "2"}},
		{"lock-contention", map[string]string{"keys": "16777216", "threads": "8"}},
	} {
		s, _ := Lookup(c.exp)
		var err error
		heap, _ := memtest.Peak(func() { _, err = Run(context.Background(), s, c.raw, Options{MemoryLimit: limit}) })
		var me *param.MemoryError
		if !errors.As(err, &me) {
			t.Errorf("%s %v: %v, want a memory error", c.exp, c.raw, err)
			continue
		}
		if heap > 4<<20 {
			t.Errorf("%s %v: refusing took %d bytes of heap", c.exp, c.raw, heap)
		}
	}
	if testing.Short() {
		return
	}
	for _, c := range []struct {
		exp string
		raw map[string]string
	}{
		{"zeroing", map[string]string{"size": "4MiB", "live": "4", "threads": "2", "allocs": "16", "variants": "make,pool"}},
		{"parallel-merge", map[string]string{"rows": "400000", "groups": "200000", "threads": "2"}},
		{"lock-contention", map[string]string{"keys": "100000", "threads": "2", "ops": "20000"}},
	} {
		s, _ := Lookup(c.exp)
		p, err := newParams(s, c.raw)
		if err != nil {
			t.Fatal(err)
		}
		est := s.Memory(p)
		heap, _ := memtest.Peak(func() { _, err = Run(context.Background(), s, c.raw, Options{MemoryLimit: est}) })
		if err != nil {
			t.Errorf("%s %v: %v", c.exp, c.raw, err)
		}
		t.Logf("%s %v: peak heap %.1f MiB, estimate %.1f MiB", c.exp, c.raw, float64(heap)/(1<<20), float64(est)/(1<<20))
		if heap > est {
			t.Errorf("%s %v: peak heap %d above the estimate %d", c.exp, c.raw, heap, est)
		}
	}
}

func TestThreadsLimit(t *testing.T) {
	s, _ := Lookup("false-sharing")
	var te *param.ThreadsError
	if err := s.Check(map[string]string{"threads": "2"}, Options{MaxThreads: 1}); !errors.As(err, &te) {
		t.Errorf("2 threads on a 1-thread runtime: %v", err)
	}
	if err := s.Check(map[string]string{"threads": "1"}, Options{MaxThreads: 1}); err != nil {
		t.Errorf("1 thread: %v", err)
	}
	// c2c has no threads parameter but needs two threads running at once.
	c2c, _ := Lookup("c2c")
	if err := c2c.Check(nil, Options{MaxThreads: 1}); !errors.As(err, &te) || te.Want != 2 {
		t.Errorf("c2c on a 1-thread runtime: %v", err)
	}
}
