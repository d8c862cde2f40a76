package perf

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// Reading is one event's value over some scope (a worker, a phase, the
// whole query).
type Reading struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	Unit string `json:"unit,omitempty"`
	// Available is false when the event could not be counted; Reason says
	// why and Value is then 0 and meaningless.
	Available bool    `json:"available"`
	Reason    *Reason `json:"reason,omitempty"`
	// Value is the multiplexing-corrected value (raw × enabled/running).
	Value float64 `json:"value"`
	// Raw is the value actually counted.
	Raw uint64 `json:"raw"`
	// Scaled is true when Value was extrapolated because the counter was
	// multiplexed; Coverage is then running/enabled in percent.
	Scaled   bool    `json:"scaled"`
	Coverage float64 `json:"coverage_pct"`
}

// Readings are the events and derived metrics of one scope.
type Readings struct {
	Events  []Reading `json:"events"`
	Derived []Metric  `json:"derived"`
}

// Event returns the reading named name and whether it is available.
func (r Readings) Event(name string) (Reading, bool) {
	for _, e := range r.Events {
		if e.Name == name {
			return e, e.Available
		}
	}
	return Reading{}, false
}

// Metric returns the derived metric named name, if it was computed.
func (r Readings) Metric(name string) (Metric, bool) {
	for _, m := range r.Derived {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// WorkerReadings are one worker's readings.
type WorkerReadings struct {
	Worker int   `json:"worker"`
	WallNs int64 `json:"wall_ns"`
	Readings
}

// PhaseReadings are the readings of one phase (scan, aggregate, merge...),
// summed over workers and per worker.
type PhaseReadings struct {
	Phase   string           `json:"phase"`
	Total   Readings         `json:"total"`
	Workers []WorkerReadings `json:"workers"`
}

// Report is what a QueryMeter measured.
type Report struct {
	// Live is true for a Snapshot taken while workers still run.
	Live         bool             `json:"live"`
	Availability Availability     `json:"availability"`
	WallNs       int64            `json:"wall_ns"`
	Total        Readings         `json:"total"`
	Workers      []WorkerReadings `json:"workers"`
	Phases       []PhaseReadings  `json:"phases"`
}

// buildReadings turns accumulated counts into readings for every event of
// the meter, available or not, plus the derived metrics.
func buildReadings(events []Event, unavailable map[string]Reason, c counts, recipe string, wallNs int64) Readings {
	r := Readings{Events: make([]Reading, 0, len(events))}
	vals := map[string]float64{}
	for _, ev := range events {
		rd := Reading{Name: ev.Name, Kind: ev.Kind, Unit: ev.Unit}
		if reason, bad := unavailable[ev.Name]; bad {
			reason := reason
			rd.Reason = &reason
			r.Events = append(r.Events, rd)
			continue
		}
		x := c[ev.Name]
		switch {
		case x == nil:
			rd.Reason = &Reason{Code: ReasonNotCounted, Message: "no interval was measured"}
		case !x.counted:
			rd.Reason = &Reason{Code: ReasonNotCounted, Message: "the counter never ran (time_running = 0): counters busy or multiplexed out"}
		default:
			rd.Available = true
			rd.Value = x.value
			rd.Raw = x.raw
			rd.Scaled = x.scaled
			rd.Coverage = 100
			if x.enabled > 0 && ev.Kind != KindRusage {
				rd.Coverage = math.Min(100, 100*float64(x.running)/float64(x.enabled))
			}
			vals[ev.Name] = x.value
		}
		r.Events = append(r.Events, rd)
	}
	if wallNs > 0 {
		vals["wall"] = float64(wallNs)
	}
	r.Derived = Derive(recipe, vals)
	if r.Derived == nil {
		r.Derived = []Metric{}
	}
	return r
}

// WriteTable renders the report for a terminal: availability, the totals
// with derived metrics, then one compact row per worker and per phase.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	a := r.Availability
	fmt.Fprintf(tw, "counters:\t%s\n", a.Summary())
	if a.CPU.Vendor != "" {
		fmt.Fprintf(tw, "cpu:\t%s %s (recipe %s)\n", a.CPU, a.CPU.Brand, a.Recipe)
	}
	fmt.Fprintf(tw, "wall:\t%s\n", fmtNs(float64(r.WallNs)))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "event\tvalue\tnote")
	// Unavailable events are listed once per reason, after the counted ones.
	var reasons []string
	missing := map[string][]string{}
	for _, e := range r.Total.Events {
		switch {
		case !e.Available:
			msg := "not counted"
			if e.Reason != nil {
				msg = e.Reason.Message
			}
			if _, ok := missing[msg]; !ok {
				reasons = append(reasons, msg)
			}
			missing[msg] = append(missing[msg], e.Name)
		default:
			note := ""
			if e.Scaled {
				note = fmt.Sprintf("scaled, counted %.1f%% of the time", e.Coverage)
			}
			if e.Kind == KindRusage {
				note = "from getrusage(RUSAGE_THREAD)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, fmtValue(e.Value, e.Unit), note)
		}
	}
	if len(r.Total.Derived) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "metric\tvalue\tmeaning")
		for _, m := range r.Total.Derived {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, fmtMetric(m), m.Desc)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("perf: write table: %w", err)
	}
	for _, msg := range reasons {
		fmt.Fprintf(w, "\nnot available: %s\n  %s\n", msg, strings.Join(missing[msg], ", "))
	}
	if len(r.Workers) > 1 {
		fmt.Fprintln(w)
		writeRows(w, "worker", r.Workers, func(x WorkerReadings) string { return fmt.Sprint(x.Worker) })
	}
	for _, p := range r.Phases {
		fmt.Fprintf(w, "\nphase %s:\n", p.Phase)
		rows := append([]WorkerReadings{{Worker: -1, Readings: p.Total}}, p.Workers...)
		writeRows(w, "worker", rows, func(x WorkerReadings) string {
			if x.Worker < 0 {
				return "all"
			}
			return fmt.Sprint(x.Worker)
		})
	}
	return nil
}

// rowColumns are the compact columns of per-worker and per-phase rows.
var rowColumns = []string{EvTaskClock, EvCycles, EvInstructions, "ipc", "l1d-mpki", "llc-mpki", "backend-bound-memory-pct", EvPageFaults, EvContextSwitches}

func writeRows(w io.Writer, label string, rows []WorkerReadings, name func(WorkerReadings) string) {
	// Keep only columns that at least one row has.
	var cols []string
	for _, c := range rowColumns {
		for _, row := range rows {
			if _, ok := rowValue(row.Readings, c); ok {
				cols = append(cols, c)
				break
			}
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t%s\t\n", label, strings.Join(cols, "\t"))
	for _, row := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			if v, ok := rowValue(row.Readings, c); ok {
				cells[i] = v
			} else {
				cells[i] = "-"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", name(row), strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func rowValue(r Readings, name string) (string, bool) {
	if e, ok := r.Event(name); ok {
		return fmtValue(e.Value, e.Unit), true
	}
	if m, ok := r.Metric(name); ok {
		return fmtMetric(m), true
	}
	return "", false
}

func fmtMetric(m Metric) string {
	switch m.Unit {
	case "%":
		return fmt.Sprintf("%.1f%%", m.Value)
	case "B":
		return fmtBytes(m.Value)
	case "GHz":
		return fmt.Sprintf("%.2f GHz", m.Value)
	}
	return fmt.Sprintf("%.3g", m.Value)
}

func fmtValue(v float64, unit string) string {
	if unit == "ns" {
		return fmtNs(v)
	}
	return fmtCount(v)
}

// fmtCount prints an integer count with thousands separators.
func fmtCount(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func fmtBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
