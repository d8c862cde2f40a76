package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"cachebook/kernel/bandwidth"
	"cachebook/kernel/latency"
)

const bandwidthUsage = `usage: cachebook bandwidth [--size SIZE] [--threads LIST] [--ops LIST] [--reps N]
                           [--format table|json]

Measures sequential memory bandwidth (read, write, memset, copy) with each
thread on its own buffer of --size bytes, for each thread count in
--threads (default: 1 and all cores). GB = 10^9 bytes. JSON output is
documented in docs/measurement-json.md.`

// cmdBandwidth runs the bandwidth measurement.
func cmdBandwidth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bandwidth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, bandwidthUsage); fs.PrintDefaults() }
	sizeS := fs.String("size", "256M", "buffer size per thread")
	threadsS := fs.String("threads", "", "comma-separated thread counts (default: 1,NumCPU)")
	opsS := fs.String("ops", "read,write,memset,copy", "comma-separated operations")
	reps := fs.Int("reps", 5, "timed repetitions (median reported)")
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
	size, err := latency.ParseSize(*sizeS)
	if err != nil {
		return fmt.Errorf("--size: %w", err)
	}
	threads, err := bwParseThreads(*threadsS)
	if err != nil {
		return err
	}
	ops, err := bandwidth.ParseOps(*opsS)
	if err != nil {
		return fmt.Errorf("--ops: %w", err)
	}
	if *reps < 1 || *reps > 1000 {
		return errors.New("--reps must be 1..1000")
	}
	cfg := bandwidth.Config{Bytes: size, Threads: threads, Ops: ops, Reps: *reps}
	if *format == "table" {
		fmt.Fprintf(stdout, "memory bandwidth: %s per thread, median of %d, %d CPUs\n\n", latency.FormatSize(size), *reps, runtime.NumCPU())
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

// bwParseThreads parses "1,2,4"; empty means the default.
func bwParseThreads(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("--threads: bad thread count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func containsOp(ops []bandwidth.Op, op bandwidth.Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}
