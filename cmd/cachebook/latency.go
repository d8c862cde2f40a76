package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"cachebook/kernel/latency"
	"cachebook/kernel/param"
	"cachebook/kernel/perf"
)

const latencyUsage = `usage: cachebook latency [--min SIZE] [--max SIZE] [--ppo N] [--reps N] [--sample DUR]
                         [--huge=true|false] [--seed N] [--wall-clock] [--format table|json]

Measures the memory latency hierarchy with a random pointer chase (one
random cycle through 64-byte nodes) at working sets from --min to --max,
then detects the plateaus (cache levels, memory) and shows them next to the
cache sizes the OS reports. SIZE accepts 4096, 48K, 256M, 1G (K, M, G binary;
KB, MB, GB decimal). JSON output
is documented in docs/measurement-json.md.`

// cmdLatency runs the latency sweep.
func cmdLatency(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, latencyUsage); fs.PrintDefaults() }
	raw := param.FlagSet(fs, latency.Params())
	wall := fs.Bool("wall-clock", false, "time samples with the wall clock instead of the thread's CPU time")
	format := fs.String("format", "table", "output format: table or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q\n%s", fs.Args(), latencyUsage)
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format must be table or json, not %q", *format)
	}
	v, err := param.Parse(latency.Params(), raw())
	if err != nil {
		return err
	}
	cfg, err := latency.ConfigFrom(v, 0)
	if err != nil {
		return err
	}
	cfg.WallClock = *wall
	cfg = cfg.WithDefaults() // so that the header names the real sample time

	// Cycles per access when the CPU's cycle counter can be opened.
	avail := perf.Probe()
	cyclesNote := ""
	if avail.Hardware.Available {
		cfg.OpenCycles = func() (latency.CycleCounter, error) {
			c, err := perf.OpenCycleCounter()
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	} else if avail.Hardware.Reason != nil {
		cyclesNote = "cycles not counted: " + avail.Hardware.Reason.Message
	}

	if *format == "table" {
		fmt.Fprintf(stdout, "memory latency: random pointer chase, 64 B nodes, median of %d × %s samples\n\n", cfg.Reps, cfg.SampleTime)
		// Fixed-width columns: rows are printed as each size is measured.
		fmt.Fprintf(stdout, "%10s  %10s  %9s  %9s  %7s\n", "size", "ns/access", "min", "max", "cycles")
		cfg.Progress = func(p latency.Point, done, total int) {
			cyc := "-"
			if p.Cycles != nil {
				cyc = fmt.Sprintf("%.1f", *p.Cycles)
			}
			fmt.Fprintf(stdout, "%10s  %10.2f  %9.2f  %9.2f  %7s\n", latency.FormatSize(p.Bytes), p.Ns, p.MinNs, p.MaxNs, cyc)
		}
	}
	res, err := latency.Run(ctx, cfg)
	if res != nil && cyclesNote != "" {
		res.CyclesNote = cyclesNote
	}
	if err != nil && (res == nil || len(res.Points) == 0) {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
			return fmt.Errorf("write json: %w", jerr)
		}
		return err
	}
	res.WriteSummary(stdout)
	return err
}
