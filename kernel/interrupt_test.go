package kernel

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"cachebook/kernel/experiment"
)

// interruptCase is a cell that runs well past the longest delay of its
// trials, so that every trial interrupts it mid-run.
type interruptCase struct {
	name string
	cell Cell
	// delays are the times after the start at which the trials
	// interrupt: spread over the cell's phases (setup, measuring).
	delays []time.Duration
}

func ms(v ...int) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x) * time.Millisecond
	}
	return d
}

// interruptCases has one case per cell kind and one per experiment.
func interruptCases() []interruptCase {
	trials := ms(20, 90, 170, 260, 400, 650)
	short := ms(40, 250)
	return []interruptCase{
		{"sql", Cell{Kind: KindSQL, Source: strings.Repeat("SELECT UserID, SearchPhrase, count(*) FROM hits GROUP BY UserID, SearchPhrase ORDER BY 3 DESC LIMIT 3;\n", 2000)}, trials},
		{"latency", Cell{Kind: KindLatency, Source: "min=4K max=256M reps=50"}, trials},
		// One large working set: building its random cycle takes a second.
		{"latency-large", Cell{Kind: KindLatency, Source: "min=512M max=512M reps=50"}, trials},
		// Four threads on their own buffers: the interrupt must reach every
		// worker, during the setup (allocating and writing the buffers) as
		// well as during a timed pass.
		{"bandwidth", Cell{Kind: KindBandwidth, Source: "bytes=160M threads=1,4 ops=copy,read,write,memset reps=50"}, trials},
		{"sweep", Cell{Kind: KindSweep, Source: "rows=4e6 groups=1e3,1e6 reps=20"}, trials},
		{"cachesim", Cell{Kind: KindCachesim, Source: "random size=64M n=1e9"}, trials},
		{"cachesim-chase", Cell{Kind: KindCachesim, Source: "chase size=1G n=1e9"}, trials},
		{"cachesim-transpose", Cell{Kind: KindCachesim, Source: "transpose dim=16384"}, trials},
		{"experiment-false-sharing", Cell{Kind: KindExperiment, Source: "false-sharing\nduration=2s"}, short},
		{"experiment-lock-contention", Cell{Kind: KindExperiment, Source: "lock-contention\nops=1e8"}, short},
		{"experiment-parallel-merge", Cell{Kind: KindExperiment, Source: "parallel-merge\nrows=1e8 groups=1e7"}, short},
		{"experiment-zeroing", Cell{Kind: KindExperiment, Source: "zeroing\nallocs=1000"}, short},
		{"experiment-sum-rewrite", Cell{Kind: KindExperiment, Source: "sum-rewrite\nreps=100"}, short},
		{"experiment-mlp", Cell{Kind: KindExperiment, Source: "mlp\nsize=256MiB reps=20"}, short},
		{"experiment-stride", Cell{Kind: KindExperiment, Source: "stride\nreps=20"}, short},
		{"experiment-associativity", Cell{Kind: KindExperiment, Source: "associativity\nreps=20"}, short},
		{"experiment-c2c", Cell{Kind: KindExperiment, Source: "c2c\nduration=2s reps=20"}, short},
		{"experiment-substring", Cell{Kind: KindExperiment, Source: "substring\nreps=50"}, ms(10, 60)},
		{"experiment-page-reuse", Cell{Kind: KindExperiment, Source: "page-reuse\nrounds=1000"}, short},
		// On main since this test was written; skipped where they are not.
		{"experiment-branches", Cell{Kind: KindExperiment, Source: "branches\nreps=50"}, short},
		{"experiment-transpose", Cell{Kind: KindExperiment, Source: "transpose\nreps=50"}, short},
	}
}

// TestInterruptCasesCoverCatalog: every experiment has a case in
// TestInterruptEveryKind.
func TestInterruptCasesCoverCatalog(t *testing.T) {
	have := map[string]bool{}
	for _, c := range interruptCases() {
		have[strings.TrimPrefix(c.name, "experiment-")] = true
	}
	for _, s := range experiment.Catalog() {
		if !have[s.Name] {
			t.Errorf("experiment %s has no case in interruptCases: add one that runs for a second or more", s.Name)
		}
	}
}

// TestInterruptEveryKind interrupts a cell of every kind (and every
// experiment) mid-run, at several points of its run, and measures how long
// the work goes on after the interrupt: until the runner has returned and
// the executor is idle, which is when the next cell can start. The p99 of
// the trials (their maximum, with this few) must be within interruptBound
// (without the race detector).
func TestInterruptEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("long: interrupts every cell kind several times")
	}
	x, err := NewExecutor(Config{DB: hitsDB(t), Logger: quietLogger(), Registry: DefaultRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range interruptCases() {
		t.Run(c.name, func(t *testing.T) {
			if name, ok := strings.CutPrefix(c.name, "experiment-"); ok {
				if _, err := experiment.Lookup(name); err != nil {
					t.Skipf("no experiment %s in this build", name)
				}
			}
			// The bound is on the kernel, not on a loaded machine's
			// scheduler (a measurement thread pinned to a busy core waits
			// for it): a kind over the bound is measured once more, and
			// fails if it is over both times.
			var p99 time.Duration
			for try := 1; try <= 2; try++ {
				lat := make([]time.Duration, 0, len(c.delays))
				for _, delay := range c.delays {
					d, ename := interruptAfter(t, x, c.cell, delay)
					if ename != ErrInterrupted {
						t.Fatalf("interrupted after %v: %s, want %s (the cell must run longer)", delay, ename, ErrInterrupted)
					}
					lat = append(lat, d)
				}
				p99 = percentile(lat, 0.99)
				t.Logf("%s, try %d: work stopped p50 %v, p99 %v after the interrupt (%v)", c.name, try,
					percentile(lat, 0.5).Round(time.Millisecond), p99.Round(time.Millisecond), roundAll(lat))
				// The race detector slows the engine's batches several
				// times over (and SQL on a loaded machine misses even its
				// loose bound): race builds check that every kind is
				// interrupted and log the times; the 200 ms bound is
				// checked without it.
				if p99 <= interruptBound || raceDetector {
					return
				}
			}
			t.Errorf("%s: the work went on %v (p99) after the interrupt, twice over the bound of %v", c.name, p99, interruptBound)
		})
	}
}

// interruptAfter runs cell, interrupts it after delay and returns how long
// after the interrupt the executor was idle again, and the reply's error
// name.
func interruptAfter(t *testing.T, x *Executor, cell Cell, delay time.Duration) (time.Duration, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *Reply, 1)
	go func() {
		r, _ := x.Execute(ctx, cell, nil)
		done <- r
	}()
	time.Sleep(delay)
	t0 := time.Now()
	cancel()
	r := <-done
	if err := x.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	return time.Since(t0), r.Ename
}

// percentile returns the q-quantile of d (nearest rank).
func percentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func roundAll(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, v := range d {
		out[i] = v.Round(time.Millisecond)
	}
	return out
}
