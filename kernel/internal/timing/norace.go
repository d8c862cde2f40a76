//go:build !race

package timing

// RaceEnabled reports whether the race detector is on.
const RaceEnabled = false
