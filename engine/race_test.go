//go:build race

package engine

// raceSlowdown scales time bounds of tests: the race detector makes the
// engine's loops several times slower.
const raceSlowdown = 5
