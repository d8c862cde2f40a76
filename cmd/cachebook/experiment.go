package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"cachebook/engine"
	"cachebook/kernel/experiment"
	"cachebook/kernel/perf"
)

const experimentUsage = `usage: cachebook experiment                      list the experiments and their parameters
       cachebook experiment NAME [--PARAM VALUE ...] [--format table|json] [--counters]

Experiments that query tables (sum-rewrite) read them from --data DIR
(default $CACHEBOOK_DATA, else ./data). --counters opens per-thread perf counters (kernel/perf) on every worker of
every measured run and adds their report.`

// cmdExperiment runs one named experiment, or lists them all.
func cmdExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return listExperiments(stdout)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, experimentUsage)
		_ = listExperiments(stderr)
		return flag.ErrHelp
	}
	spec, err := experiment.Lookup(args[0])
	if err != nil {
		return err
	}
	params, format, counters, err := parseExperimentArgs(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		writeSpec(stderr, spec)
		return err
	}
	if err != nil {
		return fmt.Errorf("%w\n%s", err, experimentUsage)
	}
	var opts experiment.Options
	if spec.RunData != nil {
		// The experiment reads tables of the data directory (--data, else
		// $CACHEBOOK_DATA, else ./data) through the engine, like the kernel.
		dir := dataDir(params["data"])
		delete(params, "data")
		db, err := openEngine(engine.Options{DataDir: dir})
		if err != nil {
			return fmt.Errorf("open the data directory %s: %w", dir, err)
		}
		opts.DB, opts.DataDir = db, dir
	}
	if counters {
		opts.Counters = &perf.Options{}
	}
	res, err := experiment.Run(ctx, spec, params, opts)
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteText(stdout)
}

// parseExperimentArgs reads --name value and --name=value pairs; --format
// chooses the output, --counters (no value) turns on perf counters, every
// other name is an experiment parameter.
func parseExperimentArgs(args []string) (params map[string]string, format string, counters bool, err error) {
	params = make(map[string]string)
	format = "table"
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" {
			return nil, "", false, flag.ErrHelp
		}
		if a == "--counters" || a == "-counters" {
			counters = true
			continue
		}
		if !strings.HasPrefix(a, "-") {
			return nil, "", false, fmt.Errorf("unexpected argument %q", a)
		}
		name := strings.TrimLeft(a, "-")
		value, ok := "", false
		if k, v, found := strings.Cut(name, "="); found {
			name, value, ok = k, v, true
		}
		if name == "" {
			return nil, "", false, fmt.Errorf("bad flag %q", a)
		}
		if !ok {
			if i+1 >= len(args) {
				return nil, "", false, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if name == "format" {
			if value != "table" && value != "json" {
				return nil, "", false, fmt.Errorf("format must be table or json, got %q", value)
			}
			format = value
			continue
		}
		if _, dup := params[name]; dup {
			return nil, "", false, fmt.Errorf("flag --%s given twice", name)
		}
		params[name] = value
	}
	return params, format, counters, nil
}

func listExperiments(w io.Writer) error {
	var b strings.Builder
	for i, s := range experiment.Catalog() {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeSpec(&b, s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSpec(w io.Writer, s experiment.Spec) {
	fmt.Fprintf(w, "%s\n    %s\n", s.Name, s.Summary)
	for _, p := range s.Params {
		fmt.Fprintf(w, "    --%-10s %-12s %s\n", p.Name, p.Default, p.Help)
	}
}
