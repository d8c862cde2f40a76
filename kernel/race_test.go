//go:build race

package kernel

import "time"

// interruptBound is the longest an interrupt of a real query may take in
// tests. The race detector slows the engine's batches several times over,
// so race builds only check that the interrupt works, with a loose bound;
// the 200 ms target is checked by the normal (non-race) test run.
const interruptBound = 1000 * time.Millisecond

// raceDetector reports whether the tests run with the race detector.
const raceDetector = true
