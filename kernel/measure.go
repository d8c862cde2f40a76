package kernel

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"cachebook/kernel/bandwidth"
	"cachebook/kernel/experiment"
	"cachebook/kernel/latency"
	"cachebook/kernel/perf"
	"cachebook/kernel/sweep"
)

// registerMeasurements registers the runners of the measurement cell kinds
// (latency, bandwidth, sweep, experiment). Measurement
// cells run alone (Exclusive).
func registerMeasurements(r *Registry) {
	r.Register(KindLatency, LatencyRunner{})
	r.Register(KindBandwidth, BandwidthRunner{})
	r.Register(KindSweep, SweepRunner{})
	r.Register(KindExperiment, ExperimentRunner{})
	r.Register(KindCachesim, CachesimRunner{})
}

// kernelAttrs are cell attributes the kernel itself interprets; they are
// not parameters of a measurement.
var kernelAttrs = map[string]bool{"timeout": true, "counters": true, "id": true}

// cellParams collects a measurement cell's parameters: its attributes
// (except the kernel's own) and key=value lines of its source (blank lines
// and lines starting with # are skipped). skipFirst drops the source's first
// non-blank line (the experiment name). Keys not in allowed are an error.
func cellParams(cell Cell, skipFirst bool, allowed ...string) (map[string]string, string, error) {
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
	if allowed != nil {
		ok := map[string]bool{}
		for _, a := range allowed {
			ok[a] = true
		}
		var bad []string
		for k := range p {
			if !ok[k] {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return nil, first, &CellError{Ename: ErrExecution,
				Err: fmt.Errorf("unknown parameter(s) %s (this cell takes: %s)", strings.Join(bad, ", "), strings.Join(allowed, ", "))}
		}
	}
	return p, first, nil
}

func paramErr(name, val string, err error) error {
	return &CellError{Ename: ErrExecution, Err: fmt.Errorf("parameter %s=%q: %v", name, val, err)}
}

// measurement wraps a measurement's result as the cell's result bundle.
func measurement(kind string, v any, text string) *Outcome {
	return &Outcome{Data: map[string]any{
		MIMEMeasurement: map[string]any{"kind": kind, kind: v},
		MIMEText:        text,
	}}
}

// LatencyRunner runs latency cells: the pointer-chase sweep of package
// kernel/latency. Parameters: min, max (sizes such as 4K, 256M, 1G), ppo
// (sizes per doubling), reps, sample (Go duration), huge (true/false), seed.
type LatencyRunner struct{}

// Class reports Exclusive: measurements run alone.
func (LatencyRunner) Class(Cell) Class { return Exclusive }

// Run measures the latency curve, showing progress per working-set size.
func (LatencyRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	p, _, err := cellParams(cell, false, "min", "max", "ppo", "reps", "sample", "huge", "seed")
	if err != nil {
		return nil, err
	}
	cfg := latency.Config{HugePages: true}
	for k, v := range p {
		var err error
		switch k {
		case "min":
			cfg.MinBytes, err = latency.ParseSize(v)
		case "max":
			cfg.MaxBytes, err = latency.ParseSize(v)
		case "ppo":
			cfg.PointsPerOctave, err = boundedInt(v, 1, 64)
		case "reps":
			cfg.Reps, err = boundedInt(v, 1, 1000)
		case "sample":
			cfg.SampleTime, err = time.ParseDuration(v)
			if err == nil && (cfg.SampleTime <= 0 || cfg.SampleTime > 10*time.Second) {
				err = fmt.Errorf("want a duration in (0, 10s]")
			}
		case "huge":
			cfg.HugePages, err = strconv.ParseBool(v)
		case "seed":
			cfg.Seed, err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			return nil, paramErr(k, v, err)
		}
	}
	if cfg.MinBytes > 0 && cfg.MaxBytes > 0 && cfg.MinBytes > cfg.MaxBytes {
		return nil, &CellError{Ename: ErrExecution, Err: fmt.Errorf("min %d is larger than max %d", cfg.MinBytes, cfg.MaxBytes)}
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
		env.Display(env.DisplayID("progress"), map[string]any{
			MIMEProgress: Progress{Done: int64(done), Total: int64(total), ElapsedNs: time.Since(env.Started()).Nanoseconds()},
			MIMEText:     fmt.Sprintf("%d of %d sizes: %d B -> %.1f ns", done, total, pt.Bytes, pt.Ns),
		})
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

// BandwidthRunner runs bandwidth cells (package kernel/bandwidth).
// Parameters: bytes (per thread, e.g. 256M), threads (e.g. 1,2), ops (read,
// write, memset, copy), reps.
type BandwidthRunner struct{}

// Class reports Exclusive: measurements run alone.
func (BandwidthRunner) Class(Cell) Class { return Exclusive }

// Run measures bandwidth, showing progress per (op, threads) pair.
func (BandwidthRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	p, _, err := cellParams(cell, false, "bytes", "threads", "ops", "reps")
	if err != nil {
		return nil, err
	}
	var cfg bandwidth.Config
	for k, v := range p {
		var err error
		switch k {
		case "bytes":
			cfg.Bytes, err = latency.ParseSize(v)
		case "threads":
			for _, s := range strings.Split(v, ",") {
				n, e := boundedInt(strings.TrimSpace(s), 1, 1024)
				if e != nil {
					err = e
					break
				}
				cfg.Threads = append(cfg.Threads, n)
			}
		case "ops":
			cfg.Ops, err = bandwidth.ParseOps(v)
		case "reps":
			cfg.Reps, err = boundedInt(v, 1, 1000)
		}
		if err != nil {
			return nil, paramErr(k, v, err)
		}
	}
	cfg.Progress = func(r bandwidth.Result, done, total int) {
		env.Display(env.DisplayID("progress"), map[string]any{
			MIMEProgress: Progress{Done: int64(done), Total: int64(total), ElapsedNs: time.Since(env.Started()).Nanoseconds()},
			MIMEText:     fmt.Sprintf("%d of %d: %s with %d threads: %.2f GB/s", done, total, r.Op, r.Threads, r.GBps),
		})
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

// ExperimentRunner runs experiment cells (package kernel/experiment). The
// first line of the source names the experiment; parameters come from the
// attributes and key=value lines. With counters=on the experiment's
// workers are measured with perf counters where the host has them.
type ExperimentRunner struct{}

// Class reports Exclusive: experiments are measurements and run alone.
func (ExperimentRunner) Class(Cell) Class { return Exclusive }

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
		return nil, &CellError{Ename: ErrExecution, Err: fmt.Errorf("name the experiment on the cell's first line (one of: %s)", strings.Join(names, ", "))}
	}
	spec, err := experiment.Lookup(name)
	if err != nil {
		return nil, &CellError{Ename: ErrExecution, Err: err}
	}
	if _, set := p["data"]; !set && env.dataDir != "" {
		for _, prm := range spec.Params {
			if prm.Name == "data" {
				p["data"] = env.dataDir
			}
		}
	}
	env.Stream("stdout", fmt.Sprintf("running %s: %s\n", spec.Name, spec.Summary))
	var res *experiment.Result
	if wantCounters(cell) {
		res, err = experiment.RunWithCounters(ctx, spec, p, perf.Options{})
	} else {
		res, err = spec.Run(ctx, p, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", spec.Name, err)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		return nil, fmt.Errorf("experiment %s: %w", spec.Name, err)
	}
	return measurement(KindExperiment, res, b.String()), nil
}

// SweepRunner runs sweep cells (package kernel/sweep): the same GROUP BY
// over tables with more and more distinct keys, per strategy. Parameters:
// rows, groups (comma list), strategies (comma list of naive, radix,
// parallel, auto), reps, seed; counters=on measures every run.
type SweepRunner struct{}

// Class reports Exclusive: measurements run alone.
func (SweepRunner) Class(Cell) Class { return Exclusive }

// Run measures the sweep, showing each point as it arrives.
func (SweepRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	p, _, err := cellParams(cell, false, "rows", "groups", "strategies", "reps", "seed")
	if err != nil {
		return nil, err
	}
	cfg := sweep.Config{Counters: wantCounters(cell)}
	for k, v := range p {
		var err error
		switch k {
		case "rows":
			cfg.Rows, err = count(v)
		case "groups":
			for _, s := range strings.Split(v, ",") {
				n, e := count(strings.TrimSpace(s))
				if e != nil {
					err = e
					break
				}
				cfg.Groups = append(cfg.Groups, n)
			}
		case "strategies":
			for _, s := range strings.Split(v, ",") {
				cfg.Strategies = append(cfg.Strategies, strings.TrimSpace(s))
			}
		case "reps":
			cfg.Reps, err = boundedInt(v, 1, 100)
		case "seed":
			cfg.Seed, err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			return nil, paramErr(k, v, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, &CellError{Ename: ErrExecution, Err: err}
	}
	var points []sweep.Point
	cfg.Progress = func(pt sweep.Point, done, total int) {
		points = append(points, pt)
		env.Display(env.DisplayID("progress"), map[string]any{
			MIMEProgress: Progress{Done: int64(done), Total: int64(total), ElapsedNs: time.Since(env.Started()).Nanoseconds()},
			MIMEText:     fmt.Sprintf("%d of %d: %d groups, %s: %.2f ns/row", done, total, pt.Groups, pt.Strategy, pt.NsPerRow),
		})
		env.Display(env.DisplayID("measurement"), map[string]any{
			MIMEMeasurement: map[string]any{"kind": KindSweep, KindSweep: map[string]any{"query": sweep.Query, "points": append([]sweep.Point(nil), points...)}, "live": true},
			MIMEText:        fmt.Sprintf("%d points so far", len(points)),
		})
	}
	rep, err := sweep.Run(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s over %d rows, median of %d runs\n%10s  %-9s %10s\n", rep.Query, rep.Rows, rep.Reps, "groups", "strategy", "ns/row")
	for _, pt := range rep.Points {
		fmt.Fprintf(&b, "%10d  %-9s %10.2f\n", pt.Groups, pt.Strategy, pt.NsPerRow)
	}
	return measurement(KindSweep, rep, b.String()), nil
}

// count parses a positive count: 1000, 1e6, 10_000.
func count(s string) (int64, error) {
	s = strings.ReplaceAll(s, "_", "")
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 1 || f > 1<<40 || f != float64(int64(f)) {
		return 0, fmt.Errorf("want a positive whole number such as 100000 or 1e6")
	}
	return int64(f), nil
}

func boundedInt(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("want %d..%d", lo, hi)
	}
	return n, nil
}
