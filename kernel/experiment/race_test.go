//go:build race

package experiment

// raceEnabled: the race detector instruments every load, so a loop that
// measures memory measures the detector instead; the direction tests skip
// under it and run without it in make test-direction.
const raceEnabled = true
