//go:build linux

package kernel

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPinnedExclusiveCell checks that an exclusive cell runs on a thread
// pinned to the reserved CPU, and that a heavy cell does not.
func TestPinnedExclusiveCell(t *testing.T) {
	cpu, reason := ReservedCPU()
	if cpu < 0 {
		// Fewer than 4 CPUs: the server would not pin, but the mechanism
		// can still be checked on CPU 0 when there are at least 2.
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 || !set.IsSet(0) {
			t.Skipf("cannot check pinning here: %s", reason)
		}
		t.Logf("server would not pin here (%s); checking the mechanism on CPU 0", reason)
		cpu = 0
	}
	x, err := NewExecutor(Config{Registry: NewRegistry(), Pin: true, PinCPU: cpu, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	affinity := func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			return nil, err
		}
		return &Outcome{Data: map[string]any{"count": set.Count(), "pinned": set.IsSet(cpu)}}, nil
	}
	x.reg.Register("m", runnerFunc{class: Exclusive, run: affinity})
	x.reg.Register("h", runnerFunc{class: Heavy, run: affinity})
	r, err := x.Execute(context.Background(), Cell{Kind: "m"}, nil)
	if err != nil || r.Outcome.Data["count"] != 1 || r.Outcome.Data["pinned"] != true {
		t.Fatalf("exclusive cell affinity %v %v", r.Outcome, err)
	}
	r, err = x.Execute(context.Background(), Cell{Kind: "h"}, nil)
	if err != nil || r.Outcome.Data["count"].(int) < 2 {
		t.Fatalf("heavy cell affinity %v %v", r.Outcome, err)
	}
}
