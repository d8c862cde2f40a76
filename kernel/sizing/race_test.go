//go:build race

package sizing

// raceEnabled: the direction tests skip under the race detector, which
// would time its own instrumentation; make test-direction runs them.
const raceEnabled = true
