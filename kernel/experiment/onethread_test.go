package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cachebook/kernel/param"
)

// TestFitOneThread checks what a one-thread runtime (the browser) runs of
// each lesson experiment: the experiment as written, on one thread, or
// its model — never a refusal where a variant exists.
func TestFitOneThread(t *testing.T) {
	one := Options{MaxThreads: 1, Browser: true}
	server := Options{MaxThreads: 1} // a server limited to one thread: no browser
	tests := []struct {
		name     string
		raw      map[string]string
		o        Options
		modelled bool
		threads  string // the threads parameter run ("" : unchanged)
		note     string // in the note
	}{
		{"false-sharing", map[string]string{"threads": "2"}, one, true, "", "modelled, not measured"},
		{"lock-contention", map[string]string{"threads": "2"}, one, true, "", "model of 2 cores"},
		{"c2c", nil, one, true, "", "Go WebAssembly in the browser"},
		{"parallel-merge", map[string]string{"threads": "4"}, one, true, "", "model of 4 cores"},
		{"zeroing", nil, one, false, "1", "runs threads=1"},
		{"zeroing", map[string]string{"threads": "1"}, one, false, "", ""},
		{"branches", nil, one, false, "", ""},
		{"false-sharing", map[string]string{"threads": "2"}, server, true, "", "this server runs a cell on at most 1 thread"},
		{"zeroing", nil, server, false, "1", "this server runs a cell on at most 1 thread"},
		{"false-sharing", map[string]string{"threads": "2"}, Options{}, false, "", ""},
		{"false-sharing", map[string]string{"threads": "2"}, Options{MaxThreads: 4}, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Lookup(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			fs, raw, note := s.Fit(tt.raw, tt.o)
			if fs.modelled != tt.modelled {
				t.Errorf("modelled %v, want %v", fs.modelled, tt.modelled)
			}
			if tt.threads != "" && raw["threads"] != tt.threads {
				t.Errorf("threads=%q, want %q", raw["threads"], tt.threads)
			}
			if tt.note == "" && note != "" || !strings.Contains(note, tt.note) {
				t.Errorf("note %q, want one containing %q", note, tt.note)
			}
			if strings.Contains(note, "--") {
				t.Errorf("note names a server flag: %q", note)
			}
			if !tt.o.Browser && strings.Contains(note, "browser") {
				t.Errorf("note names the browser on a server: %q", note)
			}
			if err := fs.Check(raw, tt.o); err != nil {
				t.Errorf("Check after Fit: %v", err)
			}
		})
	}
	// Without a model an experiment needing two threads is still refused,
	// with the browser's reason.
	s, _ := Lookup("false-sharing")
	s.Model = nil
	fs, raw, _ := s.Fit(map[string]string{"threads": "2"}, one)
	var te *param.ThreadsError
	if err := fs.Check(raw, one); !errors.As(err, &te) {
		t.Errorf("no model: Check = %v, want a ThreadsError", err)
	}
}

// TestCoherenceModels runs the models a one-thread runtime runs and checks
// the directions their lessons state: packed counters slower than padded,
// the mutex scaling worst and per-thread state best, a hand-over costing
// more than an L1 hit, the two-level merge faster than the serial one.
func TestCoherenceModels(t *testing.T) {
	ctx := context.Background()
	run := func(name string, raw map[string]string) *Result {
		t.Helper()
		s, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		s, raw, _ = s.Fit(raw, Options{MaxThreads: 1})
		r, err := Run(ctx, s, raw, Options{MaxThreads: 1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !r.Modelled {
			t.Errorf("%s: result not labelled modelled", name)
		}
		var b strings.Builder
		if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "MODELLED") {
			t.Errorf("%s: text %q lacks the MODELLED label (%v)", name, b.String(), err)
		}
		return r
	}

	fs := run("false-sharing", map[string]string{"threads": "2"}).Data.(*FalseSharingData)
	for _, row := range fs.Rows {
		switch {
		case row.Layout == "packed" && row.Slowdown < 3:
			t.Errorf("packed %s: modelled slowdown %.2f, want several times", row.Mode, row.Slowdown)
		case row.Layout != "packed" && row.Slowdown != 1:
			t.Errorf("%s %s: modelled slowdown %.2f, want 1", row.Layout, row.Mode, row.Slowdown)
		}
	}
	if fs.Noisy || !strings.Contains(fs.Verdict.Text, "packed") {
		t.Errorf("false-sharing verdict %+v", fs.Verdict)
	}

	lc := run("lock-contention", map[string]string{"threads": "2"}).Data.(*LockContentionData)
	scaling := map[string]float64{}
	for _, row := range lc.Rows {
		if row.Threads == 2 {
			scaling[row.Variant] = row.Scaling
		}
	}
	if !(scaling["mutex"] < 1 && scaling["mutex"] < scaling["rwmutex"] && scaling["rwmutex"] < scaling["snapshot"] && scaling["snapshot"] < scaling["per-thread"]) {
		t.Errorf("lock-contention modelled scaling %v: want mutex < 1, mutex < rwmutex < snapshot < per-thread", scaling)
	}

	c := run("c2c", map[string]string{"reps": "1", "duration": "5ms"}).Data.(*C2CData)
	if len(c.Rows) != 1 || !c.Rows[0].Valid || c.Rows[0].NSPerHandover <= 0 {
		t.Errorf("c2c model rows %+v", c.Rows)
	}

	pm := run("parallel-merge", map[string]string{"threads": "4", "rows": "400000", "groups": "50000", "reps": "3"}).Data.(*ParallelMergeData)
	var serial, two int64
	for _, row := range pm.Runs {
		if row.Threads == 4 && row.Strategy == "serial" {
			serial = row.MergeNS
		}
		if row.Threads == 4 && row.Strategy == "two-level" {
			two = row.MergeNS
		}
	}
	// Scheduled onto four modelled cores, each gets about a quarter of
	// the buckets: the two-level merge must come out faster, with a margin.
	if !(two > 0 && float64(serial) > 1.5*float64(two)) {
		t.Errorf("parallel-merge model at 4 threads: serial %d ns, two-level %d ns; want two-level over 1.5× faster", serial, two)
	}
}
