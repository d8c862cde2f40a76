package latency

import (
	"math"
	"strconv"
)

// Level is one plateau of the latency curve: a cache level or memory.
type Level struct {
	// Name is "L1", "L2", ... in order, or "memory" for the last plateau
	// when it is slower than any cache (over MemoryNs).
	Name string `json:"name"`
	// Ns is the median latency of the plateau's points.
	Ns float64 `json:"ns"`
	// FromBytes and ToBytes are the plateau's first and last sizes.
	FromBytes int64 `json:"from_bytes"`
	ToBytes   int64 `json:"to_bytes"`
	// SizeBytes estimates the level's capacity: the largest size whose
	// latency stays below the geometric mean of this plateau and the next
	// one. 0 for the last level (no knee measured after it).
	SizeBytes int64 `json:"size_bytes"`
}

// Thresholds of DetectLevels.
const (
	// kneeSlope is the growth, in log2(latency) per octave of working set,
	// above which a point belongs to a transition between levels (latency
	// ×1.7 per doubling). Plateaus may slope gently: an L3 whose latency
	// rises with page-walk cost, or DRAM, grow by less.
	kneeSlope = 0.75
	// mergeRatio: adjacent plateaus closer than this are one level, split
	// by noise or by TLB misses (a cache level is 2× or more slower than
	// the one before it; page walks add much less).
	mergeRatio = 1.6
	// MemoryNs: a last plateau slower than this is DRAM, not a cache.
	MemoryNs = 45.0
)

// DetectLevels finds the plateaus of a latency curve (points sorted by
// size). It smooths log latency with a running median of three, computes
// each point's slope over about half an octave, treats points steeper than
// kneeSlope as transitions, takes the runs between transitions (at least
// two points, or half an octave) as plateaus, merges neighbours that differ
// by less than mergeRatio (or are both slower than MemoryNs: DRAM latency
// keeps rising with page-walk cost, which is no new level), and places
// each knee where the curve first exceeds the geometric mean of two
// adjacent plateaus. It is a pure function.
func DetectLevels(points []Point) []Level {
	n := len(points)
	if n == 0 {
		return nil
	}
	x := make([]float64, n)
	raw := make([]float64, n)
	for i, p := range points {
		x[i] = math.Log2(float64(max(p.Bytes, 1)))
		raw[i] = math.Log2(math.Max(p.Ns, 1e-3))
	}
	y := make([]float64, n)
	for i := range y {
		if i == 0 || i == n-1 {
			y[i] = raw[i]
			continue
		}
		y[i] = median(raw[i-1 : i+2])
	}
	// Slope over about half an octave around each point, so that noise
	// between neighbouring sizes does not look like a knee.
	w := 1
	minRun := 2
	if n > 1 {
		dx := make([]float64, n-1)
		for i := range dx {
			dx[i] = x[i+1] - x[i]
		}
		if d := median(dx); d > 0 {
			w = max(1, int(math.Round(0.25/d)))
			minRun = max(2, int(math.Round(0.5/d)))
		}
	}
	flat := make([]bool, n)
	for i := range n {
		lo, hi := max(i-w, 0), min(i+w, n-1)
		if hi == lo || x[hi] == x[lo] {
			flat[i] = true
			continue
		}
		flat[i] = (y[hi]-y[lo])/(x[hi]-x[lo]) < kneeSlope
	}
	type run struct{ lo, hi int }
	var runs []run
	for i := 0; i < n; {
		if !flat[i] {
			i++
			continue
		}
		j := i
		for j+1 < n && flat[j+1] {
			j++
		}
		if j-i+1 >= minRun || j-i+1 == n {
			runs = append(runs, run{i, j})
		}
		i = j + 1
	}
	if len(runs) == 0 {
		// No plateau at all: one level over everything.
		runs = []run{{0, n - 1}}
	}
	ns := func(r run) float64 {
		v := make([]float64, 0, r.hi-r.lo+1)
		for _, p := range points[r.lo : r.hi+1] {
			v = append(v, p.Ns)
		}
		return median(v)
	}
	merged := []run{runs[0]}
	for _, r := range runs[1:] {
		last := &merged[len(merged)-1]
		if a, b := ns(*last), ns(r); b/a < mergeRatio || (a > MemoryNs && b > MemoryNs) {
			last.hi = r.hi
			continue
		}
		merged = append(merged, r)
	}
	levels := make([]Level, len(merged))
	for k, r := range merged {
		levels[k] = Level{Ns: ns(r), FromBytes: points[r.lo].Bytes, ToBytes: points[r.hi].Bytes}
	}
	for k := 0; k+1 < len(merged); k++ {
		knee := math.Sqrt(levels[k].Ns * levels[k+1].Ns)
		size := points[merged[k].hi].Bytes
		for i := merged[k].hi + 1; i <= merged[k+1].lo; i++ {
			if points[i].Ns > knee {
				break
			}
			size = points[i].Bytes
		}
		levels[k].SizeBytes = size
	}
	for k := range levels {
		levels[k].Name = "L" + strconv.Itoa(k+1)
	}
	if last := &levels[len(levels)-1]; len(levels) > 1 && last.Ns > MemoryNs {
		last.Name = "memory"
	}
	return levels
}
