//go:build !linux

package perf

import (
	"runtime"
	"testing"
)

func TestProbeElsewhere(t *testing.T) {
	a := Probe()
	want := ReasonNotLinux
	if runtime.GOOS == "js" {
		want = ReasonBrowser
	}
	for _, s := range []Status{a.Software, a.Hardware, a.Raw} {
		if s.Available || s.Reason == nil || s.Reason.Code != want {
			t.Errorf("status %+v, want unavailable with %s", s, want)
		}
	}
	m := NewQueryMeter(Options{Availability: &a})
	h := m.Hooks(nil)
	h.WorkerStart(0)
	h.WorkerStop(0)
	rep := m.Report()
	if e, ok := rep.Total.Event(EvTaskClock); ok || e.Reason == nil || e.Reason.Code != want {
		t.Errorf("task-clock %+v", e)
	}
	if _, err := OpenCycleCounter(); err == nil {
		t.Error("cycle counter opened")
	}
}
