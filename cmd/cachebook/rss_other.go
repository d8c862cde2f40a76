//go:build !linux

package main

// peakRSS returns 0: only Linux reports a process's peak resident memory
// here.
func peakRSS(pid int) int64 { return 0 }
