package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"cachebook/engine/agg"
)

// TestRunWorkers: every worker runs every phase, a phase's start runs once
// after every worker finished the phase before, the hooks bracket each
// worker and phase, a failure or a panic (in a phase or a hook) ends the
// run before the next phase with the error, and each phase's time leaves
// out what the phase says it waited.
func TestRunWorkers(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		threads int
		fail    string // "error", "panic", "stop" (a WorkerStop hook panics)
		want    error  // nil, boom, or a *agg.PanicError (any non-nil)
	}{
		{name: "one thread", threads: 1},
		{name: "three threads", threads: 3},
		{name: "error", threads: 3, fail: "error", want: boom},
		{name: "panic", threads: 3, fail: "panic", want: &agg.PanicError{}},
		{name: "one thread panic", threads: 1, fail: "panic", want: &agg.PanicError{}},
		{name: "hook panic", threads: 2, fail: "stop", want: &agg.PanicError{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var starts, ends, done1, secondEarly, starts2 atomic.Int64
			hooks := &Hooks{
				LockThreads: true,
				PhaseStart:  func(int, string) { starts.Add(1) },
				PhaseEnd:    func(int, string) { ends.Add(1) },
				WorkerStop: func(w int) {
					if tc.fail == "stop" && w == 2 {
						panic("in WorkerStop")
					}
				},
			}
			x := &execCtx{ctx: context.Background(), hooks: hooks}
			one := workerPhase{name: "partition", run: func(w, slot int) (int64, time.Duration, error) {
				if slot == tc.threads-1 {
					switch tc.fail {
					case "error":
						return 0, 0, boom
					case "panic":
						var a []int
						_ = a[slot+5]
					}
				}
				done1.Add(1)
				return 10, 0, nil
			}}
			two := workerPhase{name: "aggregate",
				start: func() error {
					starts2.Add(1)
					if done1.Load() != int64(tc.threads) {
						secondEarly.Add(1)
					}
					return nil
				},
				run: func(w, slot int) (int64, time.Duration, error) {
					time.Sleep(2 * time.Millisecond)
					return 5, time.Hour, nil // "waited" longer than it ran
				}}
			stats, err := x.runWorkers(tc.threads, one, two)
			var pe *agg.PanicError
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("err = %v", err)
			case tc.want == boom && !errors.Is(err, boom):
				t.Fatalf("err = %v, want %v", err, boom)
			case tc.want != nil && tc.want != boom && !errors.As(err, &pe):
				t.Fatalf("err = %v, want a *agg.PanicError", err)
			}
			if secondEarly.Load() != 0 || starts2.Load() > 1 {
				t.Errorf("second phase's start ran %d times, %d before the first phase ended", starts2.Load(), secondEarly.Load())
			}
			if starts.Load() != ends.Load() {
				t.Errorf("%d phase starts, %d ends", starts.Load(), ends.Load())
			}
			phases := 2
			if tc.fail == "error" || tc.fail == "panic" {
				phases = 1 // none goes on after a failure
				if starts2.Load() != 0 {
					t.Errorf("second phase started after a failure")
				}
			}
			// After a failure, workers that had not started a phase skip it.
			if got := len(stats); got > tc.threads*phases || tc.fail == "" && got != tc.threads*phases {
				t.Errorf("%d statistics, want %d", got, tc.threads*phases)
			}
			for _, st := range stats {
				if st.Phase == "aggregate" && st.Time >= 0 {
					t.Errorf("%+v: the hour waited was not left out", st)
				}
				if tc.threads > 1 && st.Worker == 0 {
					t.Errorf("%+v: parallel workers are numbered from 1", st)
				}
			}
		})
	}
}
