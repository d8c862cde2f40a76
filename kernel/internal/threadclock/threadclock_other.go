//go:build !linux

// Package threadclock reads the calling OS thread's own clocks: its CPU
// time and its page faults. The goroutine must be locked to its thread
// (runtime.LockOSThread) for the readings to mean anything.
package threadclock

import "time"

// CPU is unavailable on this OS: it reports 0, and callers treat CPU
// times and shares as unknown.
func CPU() time.Duration { return 0 }

// Faults is unavailable on this OS: it reports 0.
func Faults() int64 { return 0 }
