// Package timing holds what the direction tests share: tests that assert a
// hardware effect's direction as a ratio measured in one run, with a
// margin. They skip where the effect cannot show and take the best of
// three tries; make test-direction runs them without the race detector.
package timing

import (
	"strings"
	"testing"
)

// Skip skips a test that asserts a hardware effect where the effect
// cannot show: with -short, and under the race detector, which instruments
// every load the test times.
func Skip(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("measures memory; skipped with -short")
	}
	if RaceEnabled {
		t.Skip("measures memory; the race detector's instrumentation would be measured instead (make test-direction runs it)")
	}
}

// Eventually runs a direction check up to three times and fails only when
// every try fails: a VM's neighbour can steal one run, not three. check
// returns "" when the direction held, else what it saw.
func Eventually(t *testing.T, check func() string) {
	t.Helper()
	var msgs []string
	for range 3 {
		msg := check()
		if msg == "" {
			return
		}
		msgs = append(msgs, msg)
	}
	t.Errorf("the direction did not hold in 3 tries:\n%s", strings.Join(msgs, "\n"))
}
