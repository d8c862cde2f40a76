package kernel

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"cachebook/kernel/bandwidth"
	"cachebook/kernel/experiment"
	"cachebook/kernel/latency"
	"cachebook/kernel/param"
	"cachebook/kernel/perf"
	"cachebook/kernel/sweep"
)

// kernelAttrs are cell attributes the kernel itself interprets; they are
// not parameters of a measurement.
var kernelAttrs = map[string]bool{"timeout": true, "counters": true, "id": true, AttrAgain: true}

// cellParams collects a measurement cell's parameters: its attributes
// (except the kernel's own) and key=value words of its source (blank lines
// and lines starting with # are skipped). skipFirst drops the source's
// first non-blank line (the experiment name), which it returns.
func cellParams(cell Cell, skipFirst bool) (map[string]string, string, error) {
	p := map[string]string{}
	for k, v := range cell.Attrs {
		if !kernelAttrs[k] {
			p[k] = v
		}
	}
	first := ""
	for _, line := range strings.Split(cell.Source, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if skipFirst && first == "" {
			first = line
			continue
		}
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || k == "" {
				return nil, first, &CellError{Ename: ErrExecution, Err: fmt.Errorf("parameter %q: want key=value", f)}
			}
			p[k] = v
		}
	}
	return p, first, nil
}

// parseCell reads a measurement cell's parameters against params.
func parseCell(cell Cell, params []param.Param) (param.Values, error) {
	raw, _, err := cellParams(cell, false)
	if err != nil {
		return param.Values{}, err
	}
	v, err := param.Parse(params, raw)
	if err != nil {
		return v, &CellError{Ename: ErrExecution, Err: err}
	}
	return v, nil
}

// limitError gives the errors of the runtime's explicit limits their
// names: MemoryLimit for a run that would not fit the per-cell memory,
// Unavailable for one that needs more threads than the runtime has.
func limitError(err error) error {
	var me *param.MemoryError
	var te *param.ThreadsError
	switch {
	case errors.As(err, &me):
		return &CellError{Ename: ErrMemoryLimit, Err: err}
	case errors.As(err, &te):
		return &CellError{Ename: ErrUnavailable, Err: err}
	case err != nil:
		return &CellError{Ename: ErrExecution, Err: err}
	}
	return nil
}

// measurement wraps a measurement's result as the cell's result bundle.
func measurement(kind string, v any, text string) *Outcome {
	return &Outcome{Data: map[string]any{
		MIMEMeasurement: map[string]any{"kind": kind, kind: v},
		MIMEText:        text,
	}}
}

// progress shows done of total steps (counted in unit) of a measurement.
func progress(env *Env, done, total int, unit, text string) {
	env.Display(env.DisplayID("progress"), map[string]any{
		MIMEProgress: Progress{Done: int64(done), Total: int64(total), Unit: unit, ElapsedNs: time.Since(env.Started()).Nanoseconds()},
		MIMEText:     text,
	})
}

// LatencyRunner runs latency cells: the pointer-chase sweep of package
// kernel/latency, with the parameters of latency.Params.
type LatencyRunner struct{}

// Class reports Exclusive: measurements run alone.
func (LatencyRunner) Class(Cell) Class { return Exclusive }

// Info describes latency cells.
func (LatencyRunner) Info() KindInfo {
	return KindInfo{Name: KindLatency, Summary: "memory latency by working-set size (random pointer chase)",
		Runtimes: bothRuntimes, Params: latency.Params()}
}

// Run measures the latency curve, showing progress per working-set size.
func (LatencyRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	cell, note, err := latencyVariant(cell, env.Limits()) // no disk in the browser
	if err != nil {
		return nil, err
	}
	if note != "" {
		env.Stream("stdout", note+"\n")
	}
	v, err := parseCell(cell, latency.Params())
	if err != nil {
		return nil, err
	}
	cfg, err := latency.ConfigFrom(v, env.Limits().CellMemory)
	if err != nil {
		return nil, env.Limits().limitError(err)
	}
	avail := perf.Probe()
	if avail.Hardware.Available {
		cfg.OpenCycles = func() (latency.CycleCounter, error) {
			c, err := perf.OpenCycleCounter()
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	var points []latency.Point
	cfg.Progress = func(pt latency.Point, done, total int) {
		points = append(points, pt)
		progress(env, done, total, "sizes", fmt.Sprintf("%d of %d sizes: %s -> %.1f ns", done, total, latency.FormatSize(pt.Bytes), pt.Ns))
		env.Display(env.DisplayID("measurement"), map[string]any{
			MIMEMeasurement: map[string]any{"kind": KindLatency, KindLatency: map[string]any{"points": append([]latency.Point(nil), points...)}, "live": true},
			MIMEText:        fmt.Sprintf("%d points so far", len(points)),
		})
	}
	res, err := latency.Run(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	if res.CyclesNote == "" && !avail.Hardware.Available && avail.Hardware.Reason != nil {
		res.CyclesNote = "cycles not counted: " + avail.Hardware.Reason.Message
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%12s  %9s\n", "working set", "ns/access")
	for _, pt := range res.Points {
		fmt.Fprintf(&b, "%12d  %9.2f\n", pt.Bytes, pt.Ns)
	}
	res.WriteSummary(&b)
	return measurement(KindLatency, res, b.String()), nil
}

// BandwidthRunner runs bandwidth cells (package kernel/bandwidth), with
// the parameters of bandwidth.Params.
type BandwidthRunner struct{}

// Class reports Exclusive: measurements run alone.
func (BandwidthRunner) Class(Cell) Class { return Exclusive }

// Info describes bandwidth cells.
func (BandwidthRunner) Info() KindInfo {
	return KindInfo{Name: KindBandwidth, Summary: "sequential memory bandwidth (read, write, memset, copy) by thread count",
		Runtimes: bothRuntimes, Params: bandwidth.Params(), Note: "in the browser: one thread"}
}

// Run measures bandwidth, showing progress per (op, threads) pair.
func (BandwidthRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	v, err := parseCell(cell, bandwidth.Params())
	if err != nil {
		return nil, err
	}
	lim := env.Limits()
	cfg, err := bandwidth.ConfigFrom(v, lim.CellMemory, lim.Threads)
	if err != nil {
		return nil, env.Limits().limitError(err)
	}
	cfg.Progress = func(r bandwidth.Result, done, total int) {
		progress(env, done, total, "runs", fmt.Sprintf("%d of %d: %s with %d threads: %.2f GB/s", done, total, r.Op, r.Threads, r.GBps))
	}
	rep, err := bandwidth.Run(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bandwidth: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %7s %10s %12s\n", "op", "threads", "GB/s", "GB/s/thread")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%-7s %7d %10.2f %12.2f\n", r.Op, r.Threads, r.GBps, r.PerThreadGBps)
	}
	for _, n := range rep.Notes {
		b.WriteString(n + "\n")
	}
	return measurement(KindBandwidth, rep, b.String()), nil
}

// SweepRunner runs sweep cells (package kernel/sweep): the same GROUP BY
// over tables with more and more distinct keys, per strategy, with the
// parameters of sweep.Params; counters=on measures every run.
type SweepRunner struct{}

// Class reports Exclusive: measurements run alone.
func (SweepRunner) Class(Cell) Class { return Exclusive }

// Info describes sweep cells.
func (SweepRunner) Info() KindInfo {
	return KindInfo{Name: KindSweep, Summary: "ns per row of one GROUP BY as the number of groups grows, per strategy",
		Runtimes: bothRuntimes, Params: sweep.Params()}
}

// Run measures the sweep, showing each point as it arrives.
func (SweepRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	cell, note, err := sweepVariant(cell, env.Limits()) // the browser's size
	if err != nil {
		return nil, err
	}
	if note != "" {
		env.Stream("stdout", note+"\n")
	}
	v, err := parseCell(cell, sweep.Params())
	if err != nil {
		return nil, err
	}
	cfg, err := sweep.ConfigFrom(v, env.Limits().CellMemory)
	if err != nil {
		return nil, env.Limits().limitError(err)
	}
	cfg.Counters = wantCounters(cell)
	if cfg.Model {
		cfg.ModelGeometry, cfg.ModelSource = HostGeometry()
	}
	var points []sweep.Point
	cfg.Progress = func(pt sweep.Point, done, total int) {
		points = append(points, pt)
		progress(env, done, total, "points", fmt.Sprintf("%d of %d: %d groups, %s: %.2f ns/row", done, total, pt.Groups, pt.Strategy, pt.NsPerRow))
		env.Display(env.DisplayID("measurement"), map[string]any{
			MIMEMeasurement: map[string]any{"kind": KindSweep, KindSweep: map[string]any{"query": sweep.Query, "rows": cfg.Rows, "reps": cfg.Reps,
				"points": append([]sweep.Point(nil), points...)}, "live": true},
			MIMEText: fmt.Sprintf("%d points so far", len(points)),
		})
	}
	rep, err := sweep.Run(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s over %d rows, median of %d runs\n%10s  %-9s %10s", rep.Query, rep.Rows, rep.Reps, "groups", "strategy", "ns/row")
	if cfg.Model {
		b.WriteString("  " + sweep.ModelHeader)
	}
	b.WriteByte('\n')
	for _, pt := range rep.Points {
		fmt.Fprintf(&b, "%10d  %-9s %10.2f", pt.Groups, pt.Strategy, pt.NsPerRow)
		if pt.Model != nil {
			b.WriteString("  " + pt.Model.Columns())
		}
		b.WriteByte('\n')
		if pt.Verdict != "" && pt.Strategy == "radix" {
			fmt.Fprintf(&b, "%10s  %s\n", "", pt.Verdict)
		}
	}
	if cfg.Model {
		fmt.Fprintf(&b, "modelled (not measured) on %s (%s), sampling %s\n", rep.ModelGeometry, rep.ModelSource, rep.ModelSampling)
	}
	return measurement(KindSweep, rep, b.String()), nil
}

// ExperimentRunner runs experiment cells (package kernel/experiment). The
// first line of the source names the experiment; parameters come from the
// attributes and key=value lines. With counters=on the experiment's
// workers are measured with perf counters where the host has them.
type ExperimentRunner struct{}

// Class reports Exclusive: experiments are measurements and run alone.
func (ExperimentRunner) Class(Cell) Class { return Exclusive }

// Info describes experiment cells and lists the experiments.
func (ExperimentRunner) Info() KindInfo {
	return KindInfo{Name: KindExperiment, Summary: "a named micro-experiment (first line: its name)",
		Runtimes: bothRuntimes, Experiments: experiment.Catalog(),
		Note: "in the browser: on one thread; an experiment that needs threads at the same time runs its model, labelled modelled"}
}

// Run runs the named experiment.
func (ExperimentRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	p, name, err := cellParams(cell, true)
	if err != nil {
		return nil, err
	}
	if n, ok := cell.Attrs["name"]; ok && name == "" {
		name = n
		delete(p, "name")
	}
	if name == "" {
		var names []string
		for _, s := range experiment.Catalog() {
			names = append(names, s.Name)
		}
		sort.Strings(names)
		return nil, &CellError{Ename: ErrExecution, Err: fmt.Errorf("name the experiment on the cell's first line (one of: %s)", strings.Join(names, ", "))}
	}
	spec, err := experiment.Lookup(name)
	if err != nil {
		return nil, &CellError{Ename: ErrExecution, Err: err}
	}
	lim := env.Limits()
	opts := experiment.Options{MemoryLimit: lim.CellMemory, MaxThreads: lim.Threads, Browser: lim.Browser, DB: env.db, DataDir: env.dataDir}
	spec, p, note := spec.Fit(p, opts) // one thread: a one-thread run or the model
	if err := spec.Check(p, opts); err != nil {
		return nil, lim.limitError(err)
	}
	env.Stream("stdout", fmt.Sprintf("running %s: %s\n", spec.Name, spec.Summary))
	if note != "" {
		env.Stream("stdout", note+"\n")
	}
	if wantCounters(cell) {
		opts.Counters = &perf.Options{}
	}
	res, err := experiment.Run(ctx, spec, p, opts)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", spec.Name, err)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		return nil, fmt.Errorf("experiment %s: %w", spec.Name, err)
	}
	return measurement(KindExperiment, res, b.String()), nil
}
