package cachesim

import (
	"math"
	"strings"
	"testing"
)

// TestTimeSampling checks time sampling on patterns: access counts stay
// exact, a stream shorter than one window is simulated exactly, the
// estimates are within four stated standard errors of the full
// simulation, the warming between windows makes a reused working set
// that fits the cache hit as it does in full, and a phase's counts
// (Mark, Since) add up to the whole.
func TestTimeSampling(t *testing.T) {
	g := DefaultGeometry()
	ts := Sampling{Every: 8, Window: 1 << 12}
	for _, c := range []struct {
		p    Pattern
		samp Sampling
	}{
		{Pattern{Name: "random", Size: 64 << 20, N: 1 << 21}, ts},
		{Pattern{Name: "hashprobe", Size: 8 << 20, N: 1 << 21}, ts},
		{Pattern{Name: "sequential", Size: 8 << 20, Passes: 2}, ts},
		// 2 MiB read 8 times: fits the 32 MiB L3, so only the first
		// pass misses it; without warming every window would start with
		// an L3 holding little of it.
		{Pattern{Name: "sequential", Size: 2 << 20, Passes: 8}, ts},
		{Pattern{Name: "random", Size: 64 << 20, N: 1 << 21}, Sampling{Mod: 64, Keep: 8, Every: 4}},
		{Pattern{Name: "random", Size: 64 << 20, N: 1 << 11}, Sampling{Every: 16}}, // shorter than a window
	} {
		full := run(t, mustSim(t, g, Sampling{}), c.p)
		smp := run(t, mustSim(t, g, c.samp), c.p)
		name := c.p.String() + ", " + c.samp.String()
		if smp.Lines != full.Lines || smp.Loads != full.Loads || smp.Stores != full.Stores {
			t.Errorf("%s: %d lines %d loads %d stores, want %d %d %d", name, smp.Lines, smp.Loads, smp.Stores, full.Lines, full.Loads, full.Stores)
		}
		short := full.Lines <= DefaultWindow
		for _, v := range sampledCounts(full, smp) {
			if short {
				if v.smp != v.full || v.se != 0 {
					t.Errorf("%s %s: %d (±%.2f%%), want exactly %d", name, v.name, v.smp, 100*v.se, v.full)
				}
				continue
			}
			rel := math.Abs(float64(v.smp-v.full)) / float64(max(v.full, 1))
			if math.IsInf(v.se, 0) || rel > 4*v.se+0.002 {
				t.Errorf("%s %s: sampled %d vs full %d (%.2f%%), stated error ±%.2f%%", name, v.name, v.smp, v.full, 100*rel, 100*v.se)
			}
		}
		if !short && (math.IsInf(smp.TimeErr.L1, 0) || math.IsNaN(smp.TimeErr.L1)) {
			t.Errorf("%s: time-sampling error %v", name, smp.TimeErr.L1)
		}
	}

	// Phases: two halves of a stream, each from Since, add up to Stats.
	sim := mustSim(t, g, ts)
	p := Pattern{Name: "random", Size: 64 << 20, N: 1 << 20}
	m0 := sim.Mark()
	run(t, sim, p)
	m1 := sim.Mark()
	first := sim.Since(m0)
	run(t, sim, p)
	second, total := sim.Since(m1), sim.Stats()
	if sum := first.Lines + second.Lines; sum != total.Lines {
		t.Errorf("phase lines %d + %d, total %d", first.Lines, second.Lines, total.Lines)
	}
	if sum := first.L1.Misses + second.L1.Misses; math.Abs(float64(sum-total.L1.Misses)) > 0.01*float64(total.L1.Misses) {
		t.Errorf("phase L1 misses %d + %d, total %d", first.L1.Misses, second.L1.Misses, total.L1.Misses)
	}
	if s := ts.String(); !strings.Contains(s, "1 in 8 windows of 4096 line accesses") || !strings.Contains(s, "warmed") {
		t.Errorf("String: %q", s)
	}
}
