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
