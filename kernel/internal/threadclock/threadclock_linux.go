//go:build linux

// Package threadclock reads the calling OS thread's own clocks: its CPU
// time and its page faults. The goroutine must be locked to its thread
// (runtime.LockOSThread) for the readings to mean anything.
package threadclock

import (
	"time"

	"golang.org/x/sys/unix"
)

// CPU returns the CPU time consumed so far by the calling OS thread, or 0
// if the clock is unavailable.
func CPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Faults returns the page faults taken so far by the calling OS thread,
// or 0 if unavailable.
func Faults() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Minflt + ru.Majflt
}
