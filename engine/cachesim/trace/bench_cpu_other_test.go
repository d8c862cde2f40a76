//go:build !linux

package trace

// cpuSeconds is not measured outside Linux.
func cpuSeconds() float64 { return 0 }
