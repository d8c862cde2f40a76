//go:build !linux

package experiment

import "time"

// threadCPU is unavailable on this OS: it reports 0.
func threadCPU() time.Duration { return 0 }

// threadFaults is unavailable on this OS: it reports 0.
func threadFaults() int64 { return 0 }
