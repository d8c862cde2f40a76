package kernel

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cachebook/engine/cachesim"
)

// CachesimRunner runs cachesim cells: a named access pattern
// (cachesim.PatternNames) over the modelled geometry, CS:APP style, so a
// learner can predict hits and misses per level and check them on any
// machine. The source is the pattern's name and its parameters, e.g.
// "random size=64M n=1M" or "transpose-blocked dim=1024 block=8"; the
// cell's attributes override the geometry (l1=32K l2=1M l3=32M l1ways=8
// prefetch=stride …) and sampling (sample=1/16; default off, so counts are
// exact).
type CachesimRunner struct{}

// Class reports Heavy: the model uses one core and no timing.
func (CachesimRunner) Class(Cell) Class { return Heavy }

// Info describes cachesim cells.
func (CachesimRunner) Info() KindInfo {
	return KindInfo{Name: KindCachesim, Runtimes: bothRuntimes,
		Summary: "a named access pattern through the cache model (" + strings.Join(cachesim.PatternNames, ", ") + "): modelled hits and misses per level"}
}

// CachesimResult is a cachesim cell's result.
type CachesimResult struct {
	Label          string          `json:"label"`
	Pattern        string          `json:"pattern"`
	Geometry       string          `json:"geometry"`
	GeometrySource string          `json:"geometry_source"`
	Sampling       string          `json:"sampling"`
	StdErr         float64         `json:"std_err"`
	Accesses       int64           `json:"accesses"`
	Counts         ModelCounts     `json:"counts"`
	Levels         []CachesimLevel `json:"levels"`
	Elapsed        time.Duration   `json:"model_ns"`
	Stats          cachesim.Stats  `json:"-"`
	geo            cachesim.Geometry
}

// CachesimLevel is the hits and misses of one level.
type CachesimLevel struct {
	Name     string `json:"name"`
	Accesses int64  `json:"accesses"`
	Hits     int64  `json:"hits"`
	Misses   int64  `json:"misses"`
}

// Run executes the pattern.
func (CachesimRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	res, err := runCachesim(ctx, cell)
	if err != nil {
		return nil, err
	}
	text := res.text()
	return &Outcome{Data: map[string]any{MIMEModel: res, MIMEText: text}}, nil
}

func runCachesim(ctx context.Context, cell Cell) (*CachesimResult, error) {
	fields := strings.Fields(cell.Source)
	if len(fields) == 0 {
		return nil, &CellError{Ename: "CachesimError", Err: fmt.Errorf("cachesim: want a pattern name (%s) and its parameters", strings.Join(cachesim.PatternNames, ", ")),
			Position: &Position{Line: 1, Col: 1}}
	}
	p, err := cachesim.ParsePattern(cachesim.DefaultPattern(fields[0]), strings.Join(fields[1:], " "))
	if err != nil {
		return nil, &CellError{Ename: "CachesimError", Err: err, Position: &Position{Line: 1, Col: 1}}
	}
	g, src, samp, err := cellGeometry(cell, 1)
	if err != nil {
		return nil, &CellError{Ename: "CachesimError", Err: err}
	}
	sim, err := cachesim.New(g, samp)
	if err != nil {
		return nil, &CellError{Ename: "CachesimError", Err: err}
	}
	t0 := time.Now()
	st, err := p.Run(ctx, sim)
	if err != nil {
		return nil, err
	}
	res := &CachesimResult{
		Label: modelLabel, Pattern: p.String(), Geometry: g.String(), GeometrySource: src, Sampling: samp.String(),
		StdErr: st.RelErr.Max(), Accesses: st.Loads + st.Stores, Counts: countsOf(st), Elapsed: time.Since(t0), Stats: st, geo: g,
	}
	level := func(name string, l cachesim.LevelStats) {
		res.Levels = append(res.Levels, CachesimLevel{Name: name, Accesses: l.Accesses, Hits: l.Accesses - l.Misses, Misses: l.Misses})
	}
	level("L1d", st.L1)
	if g.L2.Size > 0 {
		level("L2", st.L2)
	}
	if g.L3.Size > 0 {
		level("L3", st.L3)
	}
	return res, nil
}

func (r *CachesimResult) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  pattern: %s\n  geometry: %s\n  from: %s\n  sampling: %s", r.Label, r.Pattern, r.Geometry, r.GeometrySource, r.Sampling)
	if r.StdErr > 0 {
		fmt.Fprintf(&b, " (±%.1f%%)", 100*r.StdErr)
	}
	fmt.Fprintf(&b, "\n  %d accesses (%d line accesses), modelled in %v\n", r.Accesses, r.Counts.Lines, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  %-6s %14s %14s %14s %8s\n", "level", "accesses", "hits", "misses", "miss %")
	for _, l := range r.Levels {
		pct := 0.0
		if l.Accesses > 0 {
			pct = 100 * float64(l.Misses) / float64(l.Accesses)
		}
		fmt.Fprintf(&b, "  %-6s %14d %14d %14d %7.2f%%\n", l.Name, l.Accesses, l.Hits, l.Misses, pct)
	}
	fmt.Fprintf(&b, "  DRAM lines read %d, written back %d", r.Counts.DRAMReads, r.Counts.DRAMWrites)
	if r.Counts.Prefetched > 0 {
		fmt.Fprintf(&b, ", prefetched %d", r.Counts.Prefetched)
	}
	fmt.Fprintf(&b, "; dTLB L1 misses %d, page walks %d\n", r.Counts.TLB1Misses, r.Counts.TLBWalks)
	return b.String()
}
