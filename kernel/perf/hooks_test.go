package perf

import (
	"sync"

	"cachebook/engine"
)

// Hooksish builds engine hooks that record which were called, to test that
// QueryMeter.Hooks chains to the caller's hooks.
type Hooksish struct{ calls *sync.Map }

func (h Hooksish) hooks() *engine.Hooks {
	return &engine.Hooks{
		WorkerStart: func(int) { h.calls.Store("start", true) },
		WorkerStop:  func(int) { h.calls.Store("stop", true) },
		PhaseStart:  func(int, string) { h.calls.Store("pstart", true) },
		PhaseEnd:    func(int, string) { h.calls.Store("pend", true) },
	}
}
