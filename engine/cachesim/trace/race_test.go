//go:build race

package trace

// raceEnabled: the race detector instruments every access, so the
// comparison with cachegrind (which would see its shadow memory) skips.
const raceEnabled = true
