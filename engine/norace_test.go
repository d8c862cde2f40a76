//go:build !race

package engine

// raceSlowdown scales time bounds of tests (1 without the race detector).
const raceSlowdown = 1
