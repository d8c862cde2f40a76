// Package experiment holds cachebook's runnable micro-experiments: small,
// self-checking programs that reproduce one effect from the source articles
// (false sharing, lock contention, serial hash-table merges, redundant
// zeroing, the sum(x + c) rewrite) on the machine at hand.
//
// Every experiment is described by a Spec: a name, a summary, documented
// parameters with defaults small enough to finish in a few seconds on a
// two-core machine, and a Run function. Run validates its parameters,
// honours context cancellation, verifies its own results (counters add up,
// merged tables agree) and returns a Result that is both JSON-serialisable
// for the notebook kernel and printable as text tables for the CLI.
//
// The package has no global mutable state: Catalog returns a fresh list on
// every call.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"cachebook/engine"
	"cachebook/kernel/param"
	"cachebook/kernel/perf"
)

// Param documents one parameter of an experiment.
type Param struct {
	Name    string `json:"name"`
	Default string `json:"default"`
	Help    string `json:"help"`
}

// Spec describes one experiment.
type Spec struct {
	Name    string  `json:"name"`
	Summary string  `json:"summary"`
	Params  []Param `json:"params"`
	// Run executes the experiment. params maps parameter names to values;
	// missing names take their defaults and unknown names are an error.
	// hooks may be nil. Callers normally go through the package's Run,
	// which checks the runtime's limits first.
	Run func(ctx context.Context, params map[string]string, hooks *Hooks) (*Result, error) `json:"-"`
	// RunData, set instead of Run, runs an experiment that queries the
	// data directory's tables through db (never a path of its own).
	RunData func(ctx context.Context, params map[string]string, hooks *Hooks, db *engine.DB) (*Result, error) `json:"-"`
	// Tables names the tables RunData reads, which must be regular files
	// NAME.parquet in Options.DataDir.
	Tables []string `json:"tables,omitempty"`
	// MinThreads is the number of threads that must run at the same time
	// for the experiment to work at all (two for a cache line bounced
	// between cores); Check refuses it on a runtime with fewer. A
	// "threads" parameter is checked the same way.
	MinThreads int `json:"min_threads,omitempty"`
	// Memory estimates the most bytes a run with p allocates, read with the
	// same getters as the run (nil: negligible). Check refuses runs whose
	// estimate exceeds Options.MemoryLimit before anything is allocated.
	Memory func(p *params) int64 `json:"-"`
	// Model, where set, computes the experiment's result from a model
	// instead of a measurement, with the same parameters and a Data of the
	// same shape (so that a prediction's measure reads it): what a runtime
	// with fewer threads than the experiment needs runs (see Fit).
	Model func(ctx context.Context, params map[string]string, hooks *Hooks) (*Result, error) `json:"-"`
	// HasModel tells clients that the experiment has a Model.
	HasModel bool `json:"has_model,omitempty"`

	modelled bool // this Spec runs Model (from Fit): no thread checks
}

// Options are the limits and resources of one run. The zero value runs
// without limits and without data.
type Options struct {
	// MemoryLimit is the per-cell memory limit in bytes (0: none).
	MemoryLimit int64
	// MaxThreads is the most threads the runtime offers (0: no limit); an
	// experiment whose threads parameter asks for more is refused.
	MaxThreads int
	// Browser says the runtime is the browser's kernel (kernel.Limits
	// .Browser): the notes of Fit then give the browser's reason for its
	// one thread; a server with few threads gives its own.
	Browser bool
	// DB holds the data directory's tables, for experiments with RunData.
	DB *engine.DB
	// DataDir, when set, is the directory DB reads; Check verifies through
	// os.Root that the tables the experiment needs are regular files in it.
	DataDir string
	// Counters, when set, measures every worker with perf counters (see
	// RunWithCounters).
	Counters *perf.Options
	// Hooks observe the workers when Counters is nil (may be nil).
	Hooks *Hooks
}

// Check validates params against the spec and the limits of o without
// running anything: unknown or malformed parameters, a run whose memory
// estimate exceeds o.MemoryLimit (a *param.MemoryError), more threads than
// o.MaxThreads (a *param.ThreadsError), a missing data table.
func (s Spec) Check(raw map[string]string, o Options) error {
	p, err := newParams(s, raw)
	if err != nil {
		return err
	}
	if s.modelled {
		o.MaxThreads = 0
	}
	if o.MaxThreads > 0 && s.MinThreads > o.MaxThreads {
		return &param.ThreadsError{Want: s.MinThreads, Have: o.MaxThreads}
	}
	if o.MaxThreads > 0 {
		if _, ok := p.effective["threads"]; ok {
			if n := p.Int("threads", 0, 1<<16); p.err() == nil && n > o.MaxThreads {
				return &param.ThreadsError{Want: n, Have: o.MaxThreads}
			}
		}
	}
	if s.Memory != nil && o.MemoryLimit > 0 {
		need := s.Memory(p)
		if err := p.err(); err != nil {
			return err
		}
		if need > o.MemoryLimit {
			return &param.MemoryError{What: s.Name + " " + p.describe(raw), Need: need, Limit: o.MemoryLimit}
		}
	}
	if s.RunData != nil {
		if o.DB == nil {
			return fmt.Errorf("%s needs the data directory's tables, and this kernel has none", s.Name)
		}
		if o.DataDir != "" {
			if err := regularTables(o.DataDir, s.Tables); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		}
	}
	return nil
}

// regularTables checks, through os.Root so that no path leaves dir, that
// every table is a regular file NAME.parquet in dir. Its errors name the
// table, never a path outside dir.
func regularTables(dir string, tables []string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return errors.New("the data directory cannot be opened")
	}
	defer root.Close()
	for _, t := range tables {
		fi, err := root.Lstat(t + ".parquet")
		switch {
		case err != nil:
			return fmt.Errorf("the data directory has no table %s (make one with: cachebook gen)", t)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("table %s is not a regular file in the data directory", t)
		}
	}
	return nil
}

// Run checks params against o (see Spec.Check) and runs the experiment,
// with perf counters when o.Counters is set.
func Run(ctx context.Context, s Spec, params map[string]string, o Options) (*Result, error) {
	if err := s.Check(params, o); err != nil {
		return nil, err
	}
	hooks := o.Hooks
	var runs *[]CounterRun
	var avail *perf.Availability
	if o.Counters != nil {
		hooks, runs, avail = counterHooks(*o.Counters)
	}
	var r *Result
	var err error
	switch {
	case s.RunData != nil:
		r, err = s.RunData(ctx, params, hooks, o.DB)
	case s.Run != nil:
		r, err = s.Run(ctx, params, hooks)
	default:
		err = fmt.Errorf("%s cannot run", s.Name)
	}
	if err != nil {
		return nil, err
	}
	if runs != nil {
		r.Counters = *runs
		r.Tables = append(r.Tables, counterTable(avail, *runs))
	}
	return r, nil
}

// Hooks lets a caller observe the worker goroutines of an experiment, for
// example to open per-thread perf counters. Every field may be nil.
// WorkerStart and WorkerStop are called on the worker's own goroutine,
// which stays locked to its OS thread between the two calls (the
// micro-experiments always lock, since they read per-thread CPU clocks).
// Workers are numbered from 0 within one measured run.
type Hooks struct {
	// LockThreads asks the SQL engine to lock its workers to OS threads
	// too (sum-rewrite); the other experiments lock regardless.
	LockThreads bool
	// RunStart is called on the coordinating goroutine before the workers
	// of one measured run start, with a label naming the run (e.g.
	// "padded-64/atomic, 2 threads") and its worker count (0 when the SQL
	// engine decides it); RunEnd after they all stopped.
	RunStart    func(label string, workers int)
	RunEnd      func(label string)
	WorkerStart func(worker int)
	WorkerStop  func(worker int)
}

// Result is the outcome of one experiment run.
type Result struct {
	// Experiment is the Spec's name.
	Experiment string `json:"experiment"`
	// Params holds every parameter's effective value, defaults included.
	Params map[string]string `json:"params"`
	// Machine describes where it ran.
	Machine Machine `json:"machine"`
	// Tables are the measurements as text, in display order.
	Tables []Table `json:"tables"`
	// Notes explain the result: what to look for, caveats, checks passed.
	Notes []string `json:"notes,omitempty"`
	// Data is the experiment's typed result (e.g. *FalseSharingData).
	Data any `json:"data"`
	// Chart, if set, is the result to plot.
	Chart *Chart `json:"chart,omitempty"`
	// Elapsed is the wall time of the whole run.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Counters are the per-thread perf counter reports of each measured
	// run, when run by RunWithCounters.
	Counters []CounterRun `json:"counters,omitempty"`
	// Modelled is true when a model computed the result (Spec.Model), not
	// a measurement.
	Modelled bool `json:"modelled,omitempty"`
}

// Machine records the runtime environment of a result.
type Machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
}

func thisMachine() Machine {
	return Machine{
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
	}
}

// Table is a titled grid of formatted cells.
type Table struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// Catalog returns a fresh list of every experiment, in a stable order.
func Catalog() []Spec {
	cat := []Spec{
		falseSharingSpec(),
		branchesSpec(),
		lockContentionSpec(),
		parallelMergeSpec(),
		zeroingSpec(),
		sumRewriteSpec(),
		mlpSpec(),
		strideSpec(),
		assocSpec(),
		c2cSpec(),
		substringSpec(),
		pageReuseSpec(),
		transposeSpec(),
	}
	for i := range cat {
		cat[i].HasModel = cat[i].Model != nil
	}
	return cat
}

// Lookup returns the experiment called name.
func Lookup(name string) (Spec, error) {
	cat := Catalog()
	for _, s := range cat {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(cat))
	for i, s := range cat {
		names[i] = s.Name
	}
	return Spec{}, fmt.Errorf("unknown experiment %q (have %s)", name, strings.Join(names, ", "))
}

// WriteText renders r as aligned text tables followed by its notes.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	kind := "experiment"
	if r.Modelled {
		kind = "MODELLED (not measured) experiment"
	}
	fmt.Fprintf(&b, "%s %s  (%s/%s, %d CPUs, GOMAXPROCS %d, %s)\n",
		kind, r.Experiment, r.Machine.GOOS, r.Machine.GOARCH, r.Machine.NumCPU, r.Machine.GOMAXPROCS, r.Machine.GoVersion)
	keys := make([]string, 0, len(r.Params))
	for k := range r.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + r.Params[k]
	}
	fmt.Fprintf(&b, "params: %s\n", strings.Join(parts, " "))
	for _, t := range r.Tables {
		b.WriteByte('\n')
		t.write(&b)
	}
	if len(r.Notes) > 0 {
		b.WriteByte('\n')
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "* %s\n", n)
		}
	}
	fmt.Fprintf(&b, "\nelapsed %s\n", r.Elapsed.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *Table) write(b *strings.Builder) {
	if t.Title != "" {
		fmt.Fprintf(b, "%s\n", t.Title)
	}
	width := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		width[i] = len(c)
	}
	for _, row := range t.Rows {
		for i, c := range row {
			if i < len(width) && len(c) > width[i] {
				width[i] = len(c)
			}
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			if i >= len(width) {
				break
			}
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 && len(cells) == 1 {
				b.WriteString(c) // a lone column needs no padding
			} else if i == 0 {
				fmt.Fprintf(b, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(b, "%*s", width[i], c)
			}
		}
		b.WriteByte('\n')
	}
	line(t.Columns)
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, row := range t.Rows {
		line(row)
	}
}

// run is the shared frame of every experiment: it resolves the parameters
// and fills the common fields of the Result.
func run(ctx context.Context, spec Spec, raw map[string]string, body func(ctx context.Context, p *params, r *Result) error) (*Result, error) {
	p, err := newParams(spec, raw)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	r := &Result{Experiment: spec.Name, Machine: thisMachine()}
	if err := body(ctx, p, r); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	r.Params = p.effective
	r.Elapsed = time.Since(start)
	return r, nil
}

// defaultThreads is GOMAXPROCS, but at least 2 so that contention exists.
func defaultThreads() int {
	return max(2, runtime.GOMAXPROCS(0))
}

// threadSteps returns 1, 2, 4, ... up to n, always ending with n.
func threadSteps(n int) []int {
	var s []int
	for t := 1; t < n; t *= 2 {
		s = append(s, t)
	}
	return append(s, n)
}
