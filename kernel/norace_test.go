//go:build !race

package kernel

import "time"

// interruptBound is the longest an interrupt of a real query may take in
// tests: the kernel's 200 ms target.
const interruptBound = 200 * time.Millisecond

// raceDetector reports whether the tests run with the race detector.
const raceDetector = false
