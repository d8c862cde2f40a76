package kernel

import (
	"context"
	"testing"
)

// TestKeysTableFrom: a kept measurement is used without a probe; with
// none, the probe's result reaches the caller, once.
func TestKeysTableFrom(t *testing.T) {
	calls := 0
	k := newKeysTableFrom(0, 6<<20, func(int64) { calls++ })
	if got := k.lastLevel(context.Background()); got != 6<<20 || calls != 0 {
		t.Errorf("kept 6 MiB: lastLevel = %d, probe reports %d; want 6 MiB and none", got, calls)
	}
	if testing.Short() || raceDetector {
		t.Skip("-short or -race: the probe sweeps the latency curve (15 s on a busy 2-vCPU VM)")
	}
	// No measurement stored under the user's cache directory either.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	var reported int64
	k = newKeysTableFrom(0, 0, func(b int64) { reported = b; calls++ })
	got := k.lastLevel(context.Background())
	if got > 0 && (reported != got || calls != 1) {
		t.Errorf("probed %d, reported %d in %d calls; want it reported once", got, reported, calls)
	}
	if got == 0 && calls != 0 {
		t.Errorf("no plateau found, yet %d reports", calls)
	}
	k.lastLevel(context.Background())
	if calls > 1 {
		t.Errorf("a second lastLevel probed again (%d reports)", calls)
	}
}
