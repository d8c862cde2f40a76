package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"cachebook/kernel"
	"cachebook/kernel/param"
	"cachebook/kernel/perf"
	"cachebook/kernel/sweep"
)

const sweepUsage = `usage: cachebook sweep [--rows N] [--groups LIST] [--strategies LIST] [--reps N]
                       [--counters] [--data DIR] [--format table|json]

Runs ` + sweep.Query + `
on generated tables of --rows uniform random int64 keys with exactly G
distinct values, for each G in --groups (default 1e3,1e4,1e5,1e6,1e7, those up to --rows) and
each GROUP BY strategy (default naive,radix), and reports ns per row. The
tables go to a temporary directory unless --data is given. JSON output is
documented in docs/measurement-json.md.`

// cmdSweep runs the group-count sweep.
func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, sweepUsage); fs.PrintDefaults() }
	raw := param.FlagSet(fs, sweep.Params())
	counters := fs.Bool("counters", false, "count perf events on every run (report of the median run)")
	data := fs.String("data", "", "directory for the generated tables (default: a temporary one)")
	format := fs.String("format", "table", "output format: table or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q\n%s", fs.Args(), sweepUsage)
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format must be table or json, not %q", *format)
	}
	v, err := param.Parse(sweep.Params(), raw())
	if err != nil {
		return err
	}
	cfg, err := sweep.ConfigFrom(v, 0)
	if err != nil {
		return err
	}
	cfg.Counters, cfg.DataDir = *counters, *data
	if cfg.Model {
		cfg.ModelGeometry, cfg.ModelSource = kernel.HostGeometry()
	}
	rows, reps := cfg.Rows, cfg.Reps
	if *format == "table" {
		fmt.Fprintf(stdout, "GROUP BY sweep: %s\n%d rows, median of %d runs after a warm-up\n\n", sweep.Query, rows, reps)
		fmt.Fprintf(stdout, "%10s  %-9s  %8s  %8s  %10s", "groups", "strategy", "ns/row", "min", "median")
		if *counters {
			fmt.Fprintf(stdout, "  %6s  %8s  %8s  %8s  %11s", "ipc", "l1d-mpki", "llc-mpki", "mem-bound", "page-faults")
		}
		if cfg.Model {
			fmt.Fprint(stdout, "  "+sweep.ModelHeader)
		}
		fmt.Fprintln(stdout)
		cfg.Progress = func(p sweep.Point, done, total int) {
			fmt.Fprintf(stdout, "%10d  %-9s  %8.2f  %8.2f  %8.1fms", p.Groups, p.Strategy, p.NsPerRow, p.MinNsPerRow, float64(p.MedianNs)/1e6)
			if p.Counters != nil {
				t := p.Counters.Total
				fmt.Fprintf(stdout, "  %6s  %8s  %8s  %8s  %11s", sweepMetric(t, "ipc", "%.2f"), sweepMetric(t, "l1d-mpki", "%.1f"),
					sweepMetric(t, "llc-mpki", "%.1f"), sweepMetric(t, "backend-bound-memory-pct", "%.1f%%"), sweepEvent(t, perf.EvPageFaults))
			}
			if p.Model != nil {
				fmt.Fprint(stdout, "  "+p.Model.Columns())
			}
			fmt.Fprintln(stdout)
		}
	}
	rep, err := sweep.Run(ctx, cfg)
	if err != nil && (rep == nil || len(rep.Points) == 0) {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil {
			return fmt.Errorf("write json: %w", jerr)
		}
		return err
	}
	if cfg.Model {
		fmt.Fprintf(stdout, "\nmodelled (not measured) on %s (%s), sampling %s\n", rep.ModelGeometry, rep.ModelSource, rep.ModelSampling)
	}
	if *counters && len(rep.Points) > 0 && rep.Points[0].Counters != nil {
		fmt.Fprintf(stdout, "\ncounters: %s\n", rep.Points[0].Counters.Availability.Summary())
	}
	return err
}

func sweepMetric(r perf.Readings, name, format string) string {
	if m, ok := r.Metric(name); ok {
		return fmt.Sprintf(format, m.Value)
	}
	return "-"
}

func sweepEvent(r perf.Readings, name string) string {
	if e, ok := r.Event(name); ok {
		return strconv.FormatFloat(e.Value, 'f', 0, 64)
	}
	return "-"
}
