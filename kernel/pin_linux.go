//go:build linux

package kernel

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// pinThread restricts the calling OS thread to cpu. The caller must have
// locked its goroutine to the thread.
func pinThread(cpu int) error {
	var set unix.CPUSet
	set.Zero()
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("sched_setaffinity cpu %d: %w", cpu, err)
	}
	return nil
}

// ReservedCPU returns the CPU that measurement cells are pinned to: the
// highest CPU this process may run on, when it may run on at least four.
// Otherwise it returns -1 and the reason pinning is skipped.
func ReservedCPU() (cpu int, reason string) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return -1, fmt.Sprintf("cannot read the CPU affinity: %v", err)
	}
	n := set.Count()
	if n < 4 {
		return -1, fmt.Sprintf("only %d CPUs available; pinning needs at least 4", n)
	}
	for c := len(set)*64 - 1; c >= 0; c-- {
		if set.IsSet(c) {
			return c, ""
		}
	}
	return -1, "no CPU in the affinity set"
}
