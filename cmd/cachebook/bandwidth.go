package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"

	"cachebook/kernel/bandwidth"
	"cachebook/kernel/latency"
	"cachebook/kernel/param"
)

const bandwidthUsage = `usage: cachebook bandwidth [--bytes SIZE] [--threads LIST] [--ops LIST] [--reps N]
                           [--format table|json]

Measures sequential memory bandwidth (read, write, memset, copy) with each
thread on its own buffer of --bytes bytes, for each thread count in
--threads (default: 1 and all cores). GB = 10^9 bytes. JSON output is
documented in docs/measurement-json.md.`

// cmdBandwidth runs the bandwidth measurement.
func cmdBandwidth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bandwidth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, bandwidthUsage); fs.PrintDefaults() }
	raw := param.FlagSet(fs, bandwidth.Params())
	size := fs.String("size", "", "the same as --bytes (older name)")
	format := fs.String("format", "table", "output format: table or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q\n%s", fs.Args(), bandwidthUsage)
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format must be table or json, not %q", *format)
	}
	r := raw()
	if *size != "" {
		r["bytes"] = *size
	}
	v, err := param.Parse(bandwidth.Params(), r)
	if err != nil {
		return err
	}
	cfg, err := bandwidth.ConfigFrom(v, 0, 0)
	if err != nil {
		return err
	}
	ops := cfg.Ops
	if *format == "table" {
		fmt.Fprintf(stdout, "memory bandwidth: %s per thread, median of %d, %d CPUs\n\n", latency.FormatSize(cfg.Bytes), cfg.Reps, runtime.NumCPU())
		fmt.Fprintf(stdout, "%-7s  %7s  %8s  %10s  %8s  %8s\n", "op", "threads", "GB/s", "per thread", "min", "max")
		cfg.Progress = func(r bandwidth.Result, done, total int) {
			fmt.Fprintf(stdout, "%-7s  %7d  %8.1f  %10.1f  %8.1f  %8.1f\n", r.Op, r.Threads, r.GBps, r.PerThreadGBps, r.MinGBps, r.MaxGBps)
		}
	}
	rep, err := bandwidth.Run(ctx, cfg)
	if err != nil && (rep == nil || len(rep.Results) == 0) {
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
	fmt.Fprintln(stdout)
	for _, n := range rep.Notes {
		op, _, _ := strings.Cut(n, ":")
		if _, err := bandwidth.ParseOp(op); err == nil && !containsOp(ops, bandwidth.Op(op)) {
			continue // a note about an operation that was not run
		}
		fmt.Fprintln(stdout, "note:", n)
	}
	return err
}

func containsOp(ops []bandwidth.Op, op bandwidth.Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}
