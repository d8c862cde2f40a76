//go:build !race

package agg

// raceEnabled shrinks tests that the race detector slows down.
const raceEnabled = false
