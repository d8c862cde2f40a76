//go:build linux

package bandwidth

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
