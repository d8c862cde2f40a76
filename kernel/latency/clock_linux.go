//go:build linux

package latency

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPUClock returns the calling thread's CPU time, which stops while
// the thread is descheduled (shared machines), or ok=false.
func threadCPUClock() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
