package perf

import "testing"

func TestMeterHookOrderRobust(t *testing.T) {
	a := Availability{Recipe: "generic"}
	m := NewQueryMeter(Options{NoHardware: true, NoRaw: true, Availability: &a})
	m.WorkerStop(3) // stop without start: ignored
	m.PhaseEnd(3, "scan")
	m.WorkerStart(1)
	m.WorkerStart(1) // double start: one interval
	m.PhaseStart(1, "scan")
	m.PhaseEnd(1, "scan")
	m.WorkerStop(1)
	m.WorkerStop(1)
	if m.active != 0 {
		t.Errorf("active = %d", m.active)
	}
	rep := m.Report()
	if rep.Live || len(rep.Workers) != 2 || len(rep.Phases) != 1 {
		t.Fatalf("report %+v", rep)
	}
	// Nothing was probed: every perf event is unavailable with a reason
	// (context switches come from getrusage, not perf).
	for _, e := range rep.Total.Events {
		if e.Kind == KindRusage {
			continue
		}
		if e.Available || e.Reason == nil {
			t.Errorf("%s: %+v", e.Name, e)
		}
	}
	if _, ok := rep.Total.Metric("cpus-utilized"); ok {
		t.Errorf("derived from nothing: %+v", rep.Total.Derived)
	}
}
