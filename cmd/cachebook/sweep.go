package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"cachebook/kernel/perf"
	"cachebook/kernel/sweep"
)

const sweepUsage = `usage: cachebook sweep [--rows N] [--groups LIST] [--strategies LIST] [--reps N]
                       [--counters] [--data DIR] [--format table|json]

Runs ` + sweep.Query + `
on generated tables of --rows uniform random int64 keys with exactly G
distinct values, for each G in --groups (default 1e3,1e4,1e5,1e6,1e7) and
each GROUP BY strategy (default naive,radix), and reports ns per row. The
tables go to a temporary directory unless --data is given. JSON output is
documented in docs/measurement-json.md.`

// cmdSweep runs the group-count sweep.
func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, sweepUsage); fs.PrintDefaults() }
	rowsS := fs.String("rows", "1e7", "rows of the table")
	groupsS := fs.String("groups", "1e3,1e4,1e5,1e6,1e7", "comma-separated distinct-key counts")
	stratS := fs.String("strategies", "naive,radix", "comma-separated group_by strategies")
	reps := fs.Int("reps", 3, "timed runs per point (median reported), after one warm-up run")
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
	rows, err := sweepParseCount(*rowsS)
	if err != nil {
		return fmt.Errorf("--rows: %w", err)
	}
	var groups []int64
	for _, s := range strings.Split(*groupsS, ",") {
		g, err := sweepParseCount(s)
		if err != nil {
			return fmt.Errorf("--groups: %w", err)
		}
		groups = append(groups, g)
	}
	var strategies []string
	for _, s := range strings.Split(*stratS, ",") {
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, "'\\;") {
			return fmt.Errorf("--strategies: bad strategy %q", s)
		}
		strategies = append(strategies, s)
	}
	if *reps < 1 || *reps > 100 {
		return errors.New("--reps must be 1..100")
	}
	cfg := sweep.Config{Rows: rows, Groups: groups, Strategies: strategies, Reps: *reps, Counters: *counters, DataDir: *data}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if *format == "table" {
		fmt.Fprintf(stdout, "GROUP BY sweep: %s\n%d rows, median of %d runs after a warm-up\n\n", sweep.Query, rows, *reps)
		fmt.Fprintf(stdout, "%10s  %-9s  %8s  %8s  %10s", "groups", "strategy", "ns/row", "min", "median")
		if *counters {
			fmt.Fprintf(stdout, "  %6s  %8s  %8s  %8s  %11s", "ipc", "l1d-mpki", "llc-mpki", "mem-bound", "page-faults")
		}
		fmt.Fprintln(stdout)
		cfg.Progress = func(p sweep.Point, done, total int) {
			fmt.Fprintf(stdout, "%10d  %-9s  %8.2f  %8.2f  %8.1fms", p.Groups, p.Strategy, p.NsPerRow, p.MinNsPerRow, float64(p.MedianNs)/1e6)
			if p.Counters != nil {
				t := p.Counters.Total
				fmt.Fprintf(stdout, "  %6s  %8s  %8s  %8s  %11s", sweepMetric(t, "ipc", "%.2f"), sweepMetric(t, "l1d-mpki", "%.1f"),
					sweepMetric(t, "llc-mpki", "%.1f"), sweepMetric(t, "backend-bound-memory-pct", "%.1f%%"), sweepEvent(t, perf.EvPageFaults))
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
	if *counters && len(rep.Points) > 0 && rep.Points[0].Counters != nil {
		fmt.Fprintf(stdout, "\ncounters: %s\n", rep.Points[0].Counters.Availability.Summary())
	}
	return err
}

// sweepParseCount parses a positive count such as 1000, 1e6 or 10_000.
func sweepParseCount(s string) (int64, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 1 || f > 1e12 || f != float64(int64(f)) {
		return 0, fmt.Errorf("want a positive whole count such as 1000 or 1e6, got %q", s)
	}
	return int64(f), nil
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
