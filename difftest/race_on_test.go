//go:build race

package difftest

// raceEnabled shrinks tests that the race detector slows down.
const raceEnabled = true
