package perf

// GroupReading is one read of a counter group (PERF_FORMAT_GROUP with
// TOTAL_TIME_ENABLED and TOTAL_TIME_RUNNING): the times in nanoseconds and
// one raw value per event, in group order.
type GroupReading struct {
	Enabled uint64
	Running uint64
	Values  []uint64
}

// sub returns a-b, or 0 when b > a (a counter never goes backwards; a
// smaller later reading means the group was reopened).
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// Delta returns after-before for every field.
func Delta(before, after GroupReading) GroupReading {
	d := GroupReading{Enabled: sub(after.Enabled, before.Enabled), Running: sub(after.Running, before.Running)}
	d.Values = make([]uint64, len(after.Values))
	for i := range after.Values {
		var b uint64
		if i < len(before.Values) {
			b = before.Values[i]
		}
		d.Values[i] = sub(after.Values[i], b)
	}
	return d
}

// Scale returns the multiplexing-corrected estimate of a raw delta:
// raw*enabled/running. ok is false when the group never ran
// (running = 0), in which case nothing was counted.
func Scale(raw, enabled, running uint64) (v float64, scaled, ok bool) {
	if running == 0 {
		return 0, false, false
	}
	if running >= enabled {
		return float64(raw), false, true
	}
	return float64(raw) * float64(enabled) / float64(running), true, true
}

// count accumulates one event over intervals, workers and phases.
type count struct {
	raw     uint64
	value   float64 // sum of scaled values
	enabled uint64
	running uint64
	scaled  bool
	counted bool // at least one interval ran
}

// counts maps event names to accumulated counts.
type counts map[string]*count

func (c counts) get(name string) *count {
	x := c[name]
	if x == nil {
		x = &count{}
		c[name] = x
	}
	return x
}

// addGroup adds a group delta whose values are in the order of names.
func (c counts) addGroup(names []string, d GroupReading) {
	for i, name := range names {
		if i >= len(d.Values) {
			break
		}
		x := c.get(name)
		x.enabled += d.Enabled
		x.running += d.Running
		v, scaled, ok := Scale(d.Values[i], d.Enabled, d.Running)
		if !ok {
			continue
		}
		x.raw += d.Values[i]
		x.value += v
		x.scaled = x.scaled || scaled
		x.counted = true
	}
}

// addValue adds an exact (never multiplexed) value, e.g. from getrusage.
func (c counts) addValue(name string, v uint64) {
	x := c.get(name)
	x.raw += v
	x.value += float64(v)
	x.counted = true
}

// merge adds every count of o into c.
func (c counts) merge(o counts) {
	for name, y := range o {
		x := c.get(name)
		x.raw += y.raw
		x.value += y.value
		x.enabled += y.enabled
		x.running += y.running
		x.scaled = x.scaled || y.scaled
		x.counted = x.counted || y.counted
	}
}

func (c counts) clone() counts {
	o := make(counts, len(c))
	o.merge(c)
	return o
}

// Metric is a value derived from counted events.
type Metric struct {
	Name   string   `json:"name"`
	Value  float64  `json:"value"`
	Unit   string   `json:"unit,omitempty"`
	Desc   string   `json:"desc"`
	Inputs []string `json:"inputs"`
}

type metricSpec struct {
	name, unit, desc string
	inputs           []string
	// fn computes the metric; ok=false when a denominator is zero.
	fn func(v map[string]float64) (float64, bool)
	// recipes restricts the metric to these recipes (nil: all).
	recipes []string
}

func ratio(a, b float64, mul float64) (float64, bool) {
	if b == 0 {
		return 0, false
	}
	return a / b * mul, true
}

func per(num, den string, mul float64) func(map[string]float64) (float64, bool) {
	return func(v map[string]float64) (float64, bool) { return ratio(v[num], v[den], mul) }
}

var metricSpecs = []metricSpec{
	{name: "ipc", desc: "instructions per cycle", inputs: []string{EvInstructions, EvCycles}, fn: per(EvInstructions, EvCycles, 1)},
	{name: "ghz", unit: "GHz", desc: "average clock while running (cycles / task-clock)", inputs: []string{EvCycles, EvTaskClock}, fn: per(EvCycles, EvTaskClock, 1)},
	{name: "cpus-utilized", desc: "task-clock / wall time", inputs: []string{EvTaskClock, "wall"}, fn: per(EvTaskClock, "wall", 1)},
	{name: "branch-miss-pct", unit: "%", desc: "mispredicted branches", inputs: []string{EvBranchMisses, EvBranches}, fn: per(EvBranchMisses, EvBranches, 100)},
	{name: "l1d-mpki", desc: "L1D read misses per 1000 instructions", inputs: []string{EvL1DReadMisses, EvInstructions}, fn: per(EvL1DReadMisses, EvInstructions, 1000)},
	{name: "dtlb-mpki", desc: "dTLB read misses per 1000 instructions", inputs: []string{EvDTLBReadMisses, EvInstructions}, fn: per(EvDTLBReadMisses, EvInstructions, 1000)},
	{name: "llc-mpki", desc: "LLC read misses per 1000 instructions", inputs: []string{EvLLCMisses, EvInstructions}, fn: per(EvLLCMisses, EvInstructions, 1000)},
	{name: "l2-fills-pki", desc: "L1D demand fills from L2 per 1000 instructions", inputs: []string{EvFillsFromL2, EvInstructions}, fn: per(EvFillsFromL2, EvInstructions, 1000)},
	{name: "l3-fills-pki", desc: "L1D demand fills from L3 per 1000 instructions", inputs: []string{EvFillsFromL3, EvInstructions}, fn: per(EvFillsFromL3, EvInstructions, 1000)},
	{name: "dram-fills-pki", desc: "L1D demand fills from DRAM per 1000 instructions", inputs: []string{EvFillsFromDRAM, EvInstructions}, fn: per(EvFillsFromDRAM, EvInstructions, 1000)},
	{name: "dram-bytes", unit: "B", desc: "≈ DRAM demand fills × 64 B (excludes prefetch and store traffic)", inputs: []string{EvFillsFromDRAM},
		fn: func(v map[string]float64) (float64, bool) { return v[EvFillsFromDRAM] * 64, true }},
	{name: "dram-bytes", unit: "B", desc: "≈ retired loads that missed L3 × 64 B (excludes prefetch and store traffic)", inputs: []string{EvLoadsL3Miss},
		fn: func(v map[string]float64) (float64, bool) { return v[EvLoadsL3Miss] * 64, true }},
	{name: "l3-miss-loads-pki", desc: "retired loads served by DRAM per 1000 instructions", inputs: []string{EvLoadsL3Miss, EvInstructions}, fn: per(EvLoadsL3Miss, EvInstructions, 1000)},
	// AMD Zen 4/5 (perf's amdzen4/amdzen5 pipeline.json).
	{name: "backend-bound-memory-pct", unit: "%", desc: "dispatch slots stalled by the back end waiting on memory",
		inputs:  []string{EvBackendStallSlots, EvNotHaltedCycles, EvRetireLoadNotComp, EvRetireNotComplete},
		recipes: []string{"amd-zen4", "amd-zen5"}, fn: nil},
	{name: "backend-bound-pct", unit: "%", desc: "dispatch slots stalled by the back end",
		inputs:  []string{EvBackendStallSlots, EvNotHaltedCycles},
		recipes: []string{"amd-zen4", "amd-zen5"}, fn: nil},
	{name: "retiring-pct", unit: "%", desc: "dispatch slots that retired an op",
		inputs:  []string{EvRetiredOps, EvNotHaltedCycles},
		recipes: []string{"amd-zen4", "amd-zen5"}, fn: nil},
	// Intel Ice Lake+ top-down level 1 (and memory bound on SPR+).
	{name: "retiring-pct", unit: "%", desc: "issue slots that retired useful work",
		inputs:  []string{EvTopdownRetiring, EvTopdownBadSpec, EvTopdownFEBound, EvTopdownBEBound},
		recipes: []string{"intel-icelake", "intel-spr"}, fn: topdown(EvTopdownRetiring)},
	{name: "backend-bound-pct", unit: "%", desc: "issue slots stalled by the back end",
		inputs:  []string{EvTopdownRetiring, EvTopdownBadSpec, EvTopdownFEBound, EvTopdownBEBound},
		recipes: []string{"intel-icelake", "intel-spr"}, fn: topdown(EvTopdownBEBound)},
	{name: "backend-bound-memory-pct", unit: "%", desc: "issue slots stalled on memory",
		inputs:  []string{EvTopdownMemBound, EvTopdownRetiring, EvTopdownBadSpec, EvTopdownFEBound, EvTopdownBEBound},
		recipes: []string{"intel-spr"}, fn: topdown(EvTopdownMemBound)},
	// Intel Skylake approximations.
	{name: "retiring-pct", unit: "%", desc: "retirement slots used (of 4 per cycle)",
		inputs: []string{EvUopsRetireSlots, EvCoreCycles}, recipes: []string{"intel-skylake"},
		fn: func(v map[string]float64) (float64, bool) { return ratio(v[EvUopsRetireSlots], 4*v[EvCoreCycles], 100) }},
	{name: "memory-stall-pct", unit: "%", desc: "cycles stalled with a load outstanding",
		inputs: []string{EvStallsMemAny, EvCoreCycles}, recipes: []string{"intel-skylake"}, fn: per(EvStallsMemAny, EvCoreCycles, 100)},
}

func topdown(num string) func(map[string]float64) (float64, bool) {
	return func(v map[string]float64) (float64, bool) {
		sum := v[EvTopdownRetiring] + v[EvTopdownBadSpec] + v[EvTopdownFEBound] + v[EvTopdownBEBound]
		return ratio(v[num], sum, 100)
	}
}

// amdMetric evaluates the Zen slot formulas with dispatch width w.
func amdMetric(name string, w float64, v map[string]float64) (float64, bool) {
	slots := w * v[EvNotHaltedCycles]
	if slots == 0 {
		return 0, false
	}
	switch name {
	case "backend-bound-pct":
		return v[EvBackendStallSlots] / slots * 100, true
	case "retiring-pct":
		return v[EvRetiredOps] / slots * 100, true
	case "backend-bound-memory-pct":
		if v[EvRetireNotComplete] == 0 {
			return 0, false
		}
		return v[EvBackendStallSlots] / slots * (v[EvRetireLoadNotComp] / v[EvRetireNotComplete]) * 100, true
	}
	return 0, false
}

// Derive computes every metric whose inputs are all present in vals (event
// name → scaled value; "wall" is the wall time in ns). A metric with a
// missing input or a zero denominator is absent, never computed from zeros.
func Derive(recipe string, vals map[string]float64) []Metric {
	var out []Metric
	seen := map[string]bool{}
	for _, m := range metricSpecs {
		if seen[m.name] {
			continue
		}
		if m.recipes != nil && !contains(m.recipes, recipe) {
			continue
		}
		missing := false
		for _, in := range m.inputs {
			if _, ok := vals[in]; !ok {
				missing = true
				break
			}
		}
		if missing {
			continue
		}
		var v float64
		var ok bool
		if m.fn == nil {
			v, ok = amdMetric(m.name, dispatchWidth(recipe), vals)
		} else {
			v, ok = m.fn(vals)
		}
		if !ok {
			continue
		}
		seen[m.name] = true
		out = append(out, Metric{Name: m.name, Value: v, Unit: m.unit, Desc: m.desc, Inputs: m.inputs})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
