package experiment

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"cachebook/kernel/perf"
)

// CounterRun is the per-thread perf counter report of one measured run.
type CounterRun struct {
	Label  string       `json:"label"`
	Report *perf.Report `json:"report"`
}

// counterColumns are the events the summary table shows when counted.
var counterColumns = []string{
	perf.EvTaskClock, perf.EvCycles, perf.EvInstructions, perf.EvL1DReadMisses, perf.EvLLCMisses,
	perf.EvPageFaults, perf.EvContextSwitches, perf.EvCPUMigrations,
}

// RunWithCounters runs spec like Run with Options{Counters: &opts}: a
// kernel/perf QueryMeter for every measured run, each worker opening its
// counters on its own (locked) OS thread in WorkerStart and reading them in
// WorkerStop. The reports are attached as Result.Counters, summarised in
// one more table. Where the machine cannot count (no PMU,
// perf_event_paranoid), the reports say so event by event; nothing is
// estimated.
func RunWithCounters(ctx context.Context, spec Spec, params map[string]string, opts perf.Options) (*Result, error) {
	return Run(ctx, spec, params, Options{Counters: &opts})
}

// counterHooks returns hooks that meter every measured run, the runs they
// collect and the availability they were measured with.
func counterHooks(opts perf.Options) (*Hooks, *[]CounterRun, *perf.Availability) {
	if opts.Availability == nil {
		a := perf.Probe()
		opts.Availability = &a
	}
	var (
		cur  *perf.QueryMeter
		runs []CounterRun
	)
	hooks := &Hooks{
		LockThreads: true,
		RunStart:    func(string, int) { cur = perf.NewQueryMeter(opts) },
		RunEnd: func(label string) {
			runs = append(runs, CounterRun{Label: label, Report: cur.Report()})
			cur = nil
		},
		// cur is set before a run's workers start and cleared after they
		// all stopped, so the workers only ever read it.
		WorkerStart: func(w int) { cur.WorkerStart(w) },
		WorkerStop:  func(w int) { cur.WorkerStop(w) },
	}
	return hooks, &runs, opts.Availability
}

// counterTable summarises the runs' totals: one row per run, one column
// per event that was counted in at least one run.
func counterTable(a *perf.Availability, runs []CounterRun) Table {
	t := Table{Title: "per-thread counters, all workers of each run (" + a.Summary() + ")"}
	var cols []string
	for _, name := range counterColumns {
		for _, run := range runs {
			if _, ok := run.Report.Total.Event(name); ok {
				cols = append(cols, name)
				break
			}
		}
	}
	t.Columns = append([]string{"run"}, cols...)
	for _, run := range runs {
		row := []string{run.Label}
		for _, name := range cols {
			e, ok := run.Report.Total.Event(name)
			switch {
			case !ok:
				row = append(row, "-")
			case e.Unit == "ns":
				row = append(row, fmtMs(int64(e.Value)))
			default:
				row = append(row, fmtCount(e.Value))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	if len(cols) == 0 {
		t.Columns = []string{"run", "counters"}
		for i := range t.Rows {
			t.Rows[i] = append(t.Rows[i], "none countable here")
		}
	}
	return t
}

func fmtCount(v float64) string {
	switch {
	case math.Abs(v) >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case math.Abs(v) >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case math.Abs(v) >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
