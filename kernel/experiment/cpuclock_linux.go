//go:build linux

package experiment

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time consumed so far by the calling OS thread
// (the goroutine must be locked to it), or 0 if the clock is unavailable.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// threadFaults returns the page faults taken so far by the calling OS
// thread (the goroutine must be locked to it), or 0 if unavailable.
func threadFaults() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Minflt + ru.Majflt
}
