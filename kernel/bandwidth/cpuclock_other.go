//go:build !linux

package bandwidth

import "time"

// threadCPU returns 0: no per-thread CPU clock here, so CPU shares are
// unknown (reported as 0) and never make a verdict noisy.
func threadCPU() time.Duration { return 0 }
