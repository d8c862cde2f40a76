//go:build !linux

package experiment

import "time"

// threadCPU is unavailable on this OS: it reports 0.
func threadCPU() time.Duration { return 0 }
