//go:build !linux && !darwin && !windows

package latency

// platformCaches has no operating system source here; OSCaches falls back
// to CPUID where there is one.
func platformCaches() ([]Cache, string) { return nil, "" }
