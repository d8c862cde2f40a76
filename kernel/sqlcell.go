package kernel

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"cachebook/engine"
)

// SQLRunner runs sql cells on the kernel session's engine session. Every
// ;-separated statement of the cell runs in order; SET statements change
// the session's settings for the following cells.
type SQLRunner struct {
	probe *perfProbe
}

// NewSQLRunner returns an sql runner; it probes perf-counter availability
// the first time a cell asks for counters.
func NewSQLRunner() SQLRunner { return SQLRunner{probe: &perfProbe{}} }

// Class reports Exclusive for cells that collect perf counters
// (attribute counters=on), Heavy otherwise.
func (SQLRunner) Class(cell Cell) Class {
	if wantCounters(cell) {
		return Exclusive
	}
	return Heavy
}

// Info describes sql cells.
func (SQLRunner) Info() KindInfo {
	return KindInfo{Name: KindSQL, Summary: "SQL statements on the engine (;-separated; SET changes the session)",
		Runtimes: bothRuntimes}
}

func wantCounters(cell Cell) bool {
	pmu, _ := counterModes(cell)
	return pmu
}

// Run executes the cell's statements and returns the result bundle.
func (r SQLRunner) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	s := env.Engine()
	if s == nil {
		return nil, env.EngineErr()
	}
	if c, note := oneThreadSQL(cell, env.Limits()); note != "" { // the browser
		cell = c
		env.Stream("stdout", note+"\n")
	}
	// Before the counters start: building the keys table (RegisterKeys)
	// is not the cell's work. Its note states the table's sizes.
	notes, err := s.Resolve(ctx, cell.Source)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		env.Stream("stdout", n+"\n")
	}
	restore, err := applySettings(s, cell)
	if err != nil {
		return nil, err
	}
	defer restore()
	hooks := &engine.Hooks{Progress: env.Progress}
	var counters *counterSet
	if wantCounters(cell) {
		probe := r.probe
		if probe == nil {
			probe = &perfProbe{}
		}
		hooks, counters = startCounters(probe, hooks, env)
	}
	var model *ModelRecorder
	if _, ok := counterModes(cell); ok {
		var merr error
		if model, merr = newModelRecorderCell(cell); merr != nil {
			return nil, &CellError{Ename: "CountersError", Err: merr}
		}
		hooks = model.Hooks(hooks)
	} else {
		hooks = sessionModel(hooks, s, cell, &model) // SET counters = 'model'
	}
	reps, err := cellReps(cell)
	if err != nil {
		return nil, err
	}
	base, err := baselineOf(cell)
	if err != nil {
		return nil, err
	}
	// Counters and the cache model slow the run they watch, so with either
	// the last, watched run is not one of the timed rounds.
	watched := counters != nil || model != nil
	rounds, err := timedRounds(ctx, s, cell.Source, reps, watched, env)
	if err != nil {
		return nil, err
	}
	results, err := s.Exec(ctx, cell.Source, hooks)
	if len(rounds) > 0 && err == nil && !watched {
		rounds = append(rounds, elapsedOf(results))
	}
	var rep *ModelReport
	if model != nil && (len(results) > 0 || err == nil) {
		rep = model.Finish(ctx)
		rep.Annotate(results) // EXPLAIN ANALYZE shows them on the aggregate's node
	}
	bundle := BuildResult(results, env.Limits())
	if len(rounds) > 1 {
		bundle.Rounds = rounds
	}
	if counters != nil {
		bundle.Counters = counters.finish()
	}
	for _, st := range bundle.Statements {
		if st.Truncated {
			env.Stream("stderr", fmt.Sprintf("result truncated: showing %d of %d rows\n", len(st.Rows), st.RowCount))
		}
	}
	var out *Outcome
	if len(results) > 0 || err == nil {
		out = &Outcome{Data: map[string]any{MIMEResult: bundle, MIMEText: RenderText(bundle)}}
		if rep != nil {
			out.Data[MIMEModel], out.Data[MIMEText] = rep, RenderText(bundle)+"\n"+rep.Text()
		}
	}
	if err != nil {
		return out, &stmtIndexError{index: len(results), err: err}
	}
	if base > 0 {
		shares, werr := waitingShares(out, base)
		if werr != nil {
			return out, &CellError{Ename: ErrExecution, Err: werr}
		}
		for _, w := range shares {
			env.Stream("stdout", w.String()+"\n")
		}
		addWaiting(bundle.Counters, shares)
	}
	return out, nil
}

// maxReps bounds the reps attribute of an sql cell.
const maxReps = 20

// cellReps returns the number of timed rounds an sql cell asks for with
// reps=N (1 when it does not).
func cellReps(cell Cell) (int, error) {
	v, ok := cell.Attrs["reps"]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxReps {
		return 0, &CellError{Ename: ErrExecution, Err: fmt.Errorf("attribute reps=%s: want a whole number of rounds from 1 to %d", v, maxReps)}
	}
	return n, nil
}

// timedRounds runs src once untimed, so that pools, caches and decoded
// columns are warm for every timed round alike, and then its timed rounds,
// returning each round's statement times: reps-1 of them, the caller
// running and timing the last round itself with the cell's hooks, or all
// reps when the caller's run is watched by counters or the model (which
// slow it) and so not timed. Running the whole cell each round alternates
// its sides (naive, radix, naive, radix, …), so that a slow minute of a
// shared machine falls on both. With reps=1 it does nothing.
func timedRounds(ctx context.Context, s *engine.Session, src string, reps int, watched bool, env *Env) ([][]int64, error) {
	if reps <= 1 {
		return nil, nil
	}
	runs := reps
	if watched {
		runs++
		env.Stream("stdout", fmt.Sprintf("running the cell %d times, alternating its statements, after one untimed warm-up run, then once more with its counters (not timed); the results below are that last run's\n", reps))
	} else {
		env.Stream("stdout", fmt.Sprintf("running the cell %d times, alternating its statements, after one untimed warm-up run; the results below are the last run's\n", reps))
	}
	var rounds [][]int64
	for i := range runs {
		res, err := s.Exec(ctx, src, nil)
		if err != nil {
			return nil, &stmtIndexError{index: len(res), err: err}
		}
		if i > 0 {
			rounds = append(rounds, elapsedOf(res))
		}
	}
	return rounds, nil
}

// elapsedOf returns the elapsed time of each result.
func elapsedOf(results []*engine.Result) []int64 {
	out := make([]int64, len(results))
	for i, r := range results {
		if r != nil {
			out[i] = int64(r.Elapsed)
		}
	}
	return out
}

// applySettings applies an sql cell's attributes (other than the kernel's
// own: timeout, counters, id) as engine settings for this cell only, as
// ```sql {group_by=radix threads=2}``` in a notebook asks; the returned
// function puts the session's values back. An attribute that is not a
// setting, or a value the engine refuses, is an error before anything
// runs.
func applySettings(s *engine.Session, cell Cell) (restore func(), err error) {
	names := make([]string, 0, len(cell.Attrs))
	for k := range cell.Attrs {
		if !kernelAttrs[k] && !modelAttr(cell, k) && k != "reps" && k != "baseline" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	type saved struct{ name, value string }
	var old []saved
	restore = func() {
		for i := len(old) - 1; i >= 0; i-- {
			_ = s.Set(old[i].name, old[i].value) // a value the session had is valid
		}
	}
	for _, k := range names {
		setting, ok := engine.LookupSetting(k)
		if !ok {
			restore()
			return nil, &CellError{Ename: ErrExecution, Err: fmt.Errorf("attribute %s=%s: sql cells take engine settings as attributes (%s) and timeout, counters, reps, baseline", k, cell.Attrs[k], cellSettingNames())}
		}
		prev := setting.Format(s.Settings())
		if err := s.Set(k, cell.Attrs[k]); err != nil {
			restore()
			return nil, &CellError{Ename: ErrExecution, Err: fmt.Errorf("attribute %s=%s: %w", k, cell.Attrs[k], err)}
		}
		old = append(old, saved{k, prev})
	}
	return restore, nil
}

// cellSettingNames lists the engine settings an sql cell takes as
// attributes: all but counters, which as an attribute is the kernel's.
func cellSettingNames() string {
	var names []string
	for _, st := range engine.AllSettings() {
		if st.Name != "counters" {
			names = append(names, st.Name)
		}
	}
	return strings.Join(names, ", ")
}

// BuildResult converts engine results to the wire form, keeping at most
// lim.MaxRows rows per statement and lim.MaxResultBytes bytes of values in
// all; RowCount keeps the total.
func BuildResult(results []*engine.Result, lim Limits) *ResultBundle {
	lim = lim.withDefaults()
	b := &ResultBundle{Statements: make([]StatementResult, 0, len(results))}
	budget := lim.MaxResultBytes
	for _, r := range results {
		if r == nil {
			continue
		}
		st := StatementResult{
			Statement: r.Statement,
			Columns:   make([]ResultColumn, len(r.Columns)),
			Rows:      [][]*string{},
			RowCount:  r.Rows,
			Message:   r.Message,
			ElapsedNs: r.Elapsed.Nanoseconds(),
			Plan:      r.Plan,
		}
		for i, c := range r.Columns {
			st.Columns[i] = ResultColumn{Name: c.Name, Type: c.Type.String()}
		}
		n := min(r.Rows, lim.MaxRows)
		if len(r.Vecs) < len(r.Columns) {
			n = 0
		}
		for _, v := range r.Vecs {
			if v == nil || v.Len < n {
				n = 0
			}
		}
	rows:
		for i := 0; i < n; i++ {
			row := make([]*string, len(r.Columns))
			size := 0
			for j := range r.Columns {
				v := r.Vecs[j]
				if v.IsNull(i) {
					size += 4
					continue
				}
				s := v.Format(i)
				size += len(s) + 3
				row[j] = &s
			}
			if size > budget {
				break rows
			}
			budget -= size
			st.Rows = append(st.Rows, row)
		}
		st.Truncated = len(st.Rows) < st.RowCount
		b.Statements = append(b.Statements, st)
	}
	return b
}

// maxTextRows is the number of rows the text/plain rendering shows.
const maxTextRows = 40

// RenderText renders a result bundle as aligned text tables, as the CLI
// and text/plain consumers see it.
func RenderText(b *ResultBundle) string {
	var sb strings.Builder
	for i, st := range b.Statements {
		if i > 0 {
			sb.WriteByte('\n')
		}
		if len(st.Columns) == 0 {
			msg := st.Message
			if msg == "" {
				msg = "OK"
			}
			sb.WriteString(msg)
			sb.WriteByte('\n')
			continue
		}
		tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
		for j, c := range st.Columns {
			if j > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, sanitize(c.Name))
		}
		fmt.Fprintln(tw)
		// EXPLAIN's plan lines are kept whole: the engine bounds them.
		explain := len(st.Columns) == 1 && st.Columns[0].Name == "plan" && st.Plan != nil
		shown := min(len(st.Rows), maxTextRows)
		for _, row := range st.Rows[:shown] {
			for j, v := range row {
				if j > 0 {
					fmt.Fprint(tw, "\t")
				}
				if v == nil {
					fmt.Fprint(tw, "NULL")
				} else if explain {
					fmt.Fprint(tw, strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(*v))
				} else {
					fmt.Fprint(tw, sanitize(*v))
				}
			}
			fmt.Fprintln(tw)
		}
		_ = tw.Flush()
		plural := "s"
		if st.RowCount == 1 {
			plural = ""
		}
		if shown < st.RowCount {
			fmt.Fprintf(&sb, "(%d row%s, %d shown)\n", st.RowCount, plural, shown)
		} else {
			fmt.Fprintf(&sb, "(%d row%s)\n", st.RowCount, plural)
		}
	}
	return sb.String()
}

// sanitize keeps a value on one table cell: tabs and newlines become
// spaces and long values are shortened.
func sanitize(s string) string {
	const max = 60
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}
