//go:build !linux

package latency

import "time"

// threadCPUClock is not available here; the wall clock is used.
func threadCPUClock() (time.Duration, bool) { return 0, false }
