package latency

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// ProbeConfig is a short sweep for sizing experiments from the measured
// hierarchy rather than from what the OS reports: 64 KiB to 128 MiB (64 MiB
// in the browser, whose heap is small), two points an octave, three short
// samples each. It takes one to two seconds.
func ProbeConfig() Config {
	c := Config{MinBytes: 64 << 10, MaxBytes: 128 << 20, PointsPerOctave: 2, Reps: 3, SampleTime: 4 * time.Millisecond, HugePages: true}
	if runtime.GOOS == "js" {
		c.MaxBytes = 64 << 20
		c.SampleTime = 20 * time.Millisecond // browsers coarsen timers
	}
	return c
}

// probeRuns is how many sweeps ProbeLastLevel combines.
const probeRuns = 2

// LastLevel returns the capacity of the last cache level of levels (the
// result of DetectLevels) that memory follows: where the curve leaves the
// last cache plateau for the memory plateau. It fails when the curve shows
// no memory plateau after a cache level, as on a machine whose caches hold
// the whole sweep.
func LastLevel(levels []Level) (int64, error) {
	n := len(levels)
	if n < 2 || levels[n-1].Name != "memory" {
		return 0, fmt.Errorf("latency: the curve reached no memory plateau (%d levels)", n)
	}
	last := levels[n-2]
	if last.SizeBytes <= 0 {
		return 0, fmt.Errorf("latency: no knee found after %s", last.Name)
	}
	return last.SizeBytes, nil
}

// ProbeLastLevel sweeps ProbeConfig probeRuns times and returns the last
// cache level's capacity as this machine shows it to one thread now. It
// keeps the fastest of the runs' medians at each size: other programs on
// the machine only ever add latency, so the minimum is the steadier curve.
func ProbeLastLevel(ctx context.Context) (int64, error) {
	var best []Point
	for range probeRuns {
		res, err := Run(ctx, ProbeConfig())
		if err != nil {
			return 0, err
		}
		if best == nil {
			best = res.Points
			continue
		}
		for i := range min(len(best), len(res.Points)) {
			if res.Points[i].Ns < best[i].Ns {
				best[i] = res.Points[i]
			}
		}
	}
	if b, err := LastLevel(DetectLevels(best)); err == nil {
		return b, nil
	}
	return halfLatency(best)
}

// halfLatency is the fallback of ProbeLastLevel for a curve that rises
// into memory without a plateau of its own by the end of the sweep, as on
// a VM whose share of a large host L3 fades out slowly: the largest
// working set whose latency stays under half the latency at the largest
// size, provided that one is slower than any cache (MemoryNs).
func halfLatency(points []Point) (int64, error) {
	if len(points) < 2 {
		return 0, fmt.Errorf("latency: %d points are no curve", len(points))
	}
	top := points[len(points)-1].Ns
	if top < MemoryNs {
		return 0, fmt.Errorf("latency: the sweep ended at %.0f ns, still in the caches", top)
	}
	var last int64
	for _, p := range points {
		if p.Ns > top/2 {
			break
		}
		last = p.Bytes
	}
	if last == 0 {
		return 0, fmt.Errorf("latency: no cache level under half the memory latency")
	}
	return last, nil
}
