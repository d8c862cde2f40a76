package perf

import (
	"math"
	"testing"
)

func TestDeltaAndScale(t *testing.T) {
	before := GroupReading{Enabled: 1000, Running: 500, Values: []uint64{10, 20}}
	after := GroupReading{Enabled: 3000, Running: 1500, Values: []uint64{110, 220}}
	d := Delta(before, after)
	if d.Enabled != 2000 || d.Running != 1000 || d.Values[0] != 100 || d.Values[1] != 200 {
		t.Fatalf("Delta = %+v", d)
	}
	// A reopened group reads smaller: never negative.
	if d := Delta(after, before); d.Values[0] != 0 || d.Enabled != 0 {
		t.Errorf("backwards delta = %+v", d)
	}
	tests := []struct {
		raw, en, run uint64
		want         float64
		scaled, ok   bool
	}{
		{100, 2000, 1000, 200, true, true},
		{100, 1000, 1000, 100, false, true},
		{100, 1000, 1001, 100, false, true}, // rounding: running > enabled
		{100, 1000, 0, 0, false, false},     // never ran
		{0, 0, 0, 0, false, false},
		{7, 3000, 1000, 21, true, true},
	}
	for _, tt := range tests {
		v, scaled, ok := Scale(tt.raw, tt.en, tt.run)
		if v != tt.want || scaled != tt.scaled || ok != tt.ok {
			t.Errorf("Scale(%d,%d,%d) = %v,%v,%v want %v,%v,%v", tt.raw, tt.en, tt.run, v, scaled, ok, tt.want, tt.scaled, tt.ok)
		}
	}
}

func TestCountsAccumulate(t *testing.T) {
	c := counts{}
	names := []string{EvCycles, EvInstructions}
	c.addGroup(names, GroupReading{Enabled: 100, Running: 50, Values: []uint64{10, 20}}) // scaled ×2
	c.addGroup(names, GroupReading{Enabled: 100, Running: 100, Values: []uint64{5, 5}})
	c.addGroup(names, GroupReading{Enabled: 100, Running: 0, Values: []uint64{0, 0}}) // not counted
	cy := c[EvCycles]
	if cy.raw != 15 || cy.value != 25 || !cy.scaled || cy.enabled != 300 || cy.running != 150 {
		t.Errorf("cycles = %+v", *cy)
	}
	r := buildReadings([]Event{{Name: EvCycles}, {Name: EvInstructions}, {Name: EvBranches}}, map[string]Reason{EvBranches: {Code: ReasonNoPMU, Message: "x"}}, c, "generic", 0)
	got, ok := r.Event(EvCycles)
	if !ok || got.Value != 25 || !got.Scaled || math.Abs(got.Coverage-50) > 1e-9 {
		t.Errorf("reading = %+v", got)
	}
	if b, ok := r.Event(EvBranches); ok || b.Reason == nil || b.Reason.Code != ReasonNoPMU {
		t.Errorf("branches = %+v", b)
	}
	ipc, ok := r.Metric("ipc")
	if !ok || math.Abs(ipc.Value-45.0/25) > 1e-9 {
		t.Errorf("ipc = %+v %v", ipc, ok)
	}

	// A group that never ran gives "not counted", not zero.
	c2 := counts{}
	c2.addGroup(names, GroupReading{Enabled: 100, Running: 0, Values: []uint64{0, 0}})
	r2 := buildReadings([]Event{{Name: EvCycles}}, nil, c2, "generic", 0)
	if e := r2.Events[0]; e.Available || e.Reason == nil || e.Reason.Code != ReasonNotCounted {
		t.Errorf("never-ran reading = %+v", e)
	}
}

func TestDerive(t *testing.T) {
	tests := []struct {
		name   string
		recipe string
		vals   map[string]float64
		want   map[string]float64
		absent []string
	}{
		{
			name:   "software only: nothing from missing hardware",
			recipe: "amd-zen5",
			vals:   map[string]float64{EvTaskClock: 2e9, "wall": 1e9},
			want:   map[string]float64{"cpus-utilized": 2},
			absent: []string{"ipc", "ghz", "l1d-mpki", "backend-bound-memory-pct", "retiring-pct", "dram-bytes"},
		},
		{
			name:   "generic",
			recipe: "generic",
			vals: map[string]float64{EvCycles: 3e9, EvInstructions: 6e9, EvTaskClock: 1e9, EvBranches: 1e8, EvBranchMisses: 1e6,
				EvL1DReadMisses: 6e7, EvLLCMisses: 6e6, EvDTLBReadMisses: 1.2e6},
			want: map[string]float64{"ipc": 2, "ghz": 3, "branch-miss-pct": 1, "l1d-mpki": 10, "llc-mpki": 1, "dtlb-mpki": 0.2},
		},
		{
			name:   "zero denominator is absent",
			recipe: "generic",
			vals:   map[string]float64{EvCycles: 0, EvInstructions: 10},
			absent: []string{"ipc"},
		},
		{
			name:   "zen4 pipeline and fills (Pivot's metrics)",
			recipe: "amd-zen4",
			vals: map[string]float64{EvNotHaltedCycles: 1000, EvBackendStallSlots: 3000, EvRetireNotComplete: 400, EvRetireLoadNotComp: 300,
				EvRetiredOps: 1200, EvFillsFromDRAM: 10, EvInstructions: 1e4},
			// slots = 6000: backend 50 %, memory share 0.75 → 37.5 %, retiring 20 %.
			want: map[string]float64{"backend-bound-pct": 50, "backend-bound-memory-pct": 37.5, "retiring-pct": 20, "dram-bytes": 640, "dram-fills-pki": 1},
		},
		{
			name:   "zen5 has 8 slots",
			recipe: "amd-zen5",
			vals:   map[string]float64{EvNotHaltedCycles: 1000, EvRetiredOps: 1600},
			want:   map[string]float64{"retiring-pct": 20},
			absent: []string{"backend-bound-pct"},
		},
		{
			name:   "intel topdown",
			recipe: "intel-spr",
			vals:   map[string]float64{EvTopdownRetiring: 30, EvTopdownBadSpec: 10, EvTopdownFEBound: 10, EvTopdownBEBound: 50, EvTopdownMemBound: 40, EvLoadsL3Miss: 2},
			want:   map[string]float64{"retiring-pct": 30, "backend-bound-pct": 50, "backend-bound-memory-pct": 40, "dram-bytes": 128},
		},
		{
			name:   "intel skylake",
			recipe: "intel-skylake",
			vals:   map[string]float64{EvCoreCycles: 100, EvUopsRetireSlots: 200, EvStallsMemAny: 25},
			want:   map[string]float64{"retiring-pct": 50, "memory-stall-pct": 25},
		},
		{
			name:   "amd formulas not applied to intel",
			recipe: "intel-icelake",
			vals:   map[string]float64{EvNotHaltedCycles: 1000, EvRetiredOps: 1600},
			absent: []string{"retiring-pct"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]float64{}
			for _, m := range Derive(tt.recipe, tt.vals) {
				if _, dup := got[m.Name]; dup {
					t.Errorf("metric %s twice", m.Name)
				}
				got[m.Name] = m.Value
			}
			for k, v := range tt.want {
				g, ok := got[k]
				if !ok || math.Abs(g-v) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s present, want absent", k)
				}
			}
		})
	}
}
