package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"cachebook/engine"
)

// SumRewriteData is the typed result of the sum-rewrite experiment.
type SumRewriteData struct {
	Threads int    `json:"threads"` // engine threads; 0: the engine's default
	Rows    int64  `json:"rows"`    // rows of hits
	Terms   int    `json:"terms"`   // SUM(...) expressions in the query
	Reps    int    `json:"reps"`
	Query   string `json:"query"`
	// LiteralNS and RewrittenNS are the statement times of each repetition
	// with sum_rewrite off and on, run alternately.
	LiteralNS   []int64 `json:"literal_ns"`
	RewrittenNS []int64 `json:"rewritten_ns"`
	// Speedup is the best literal time over the best rewritten time.
	Speedup float64 `json:"speedup"`
	// Sums are the first and last result values (equal under both settings).
	Sums []string `json:"sums"`
	// ExplainLiteral and ExplainRewritten are the EXPLAIN plans, one line
	// per operator.
	ExplainLiteral   []string `json:"explain_literal"`
	ExplainRewritten []string `json:"explain_rewritten"`
}

func sumRewriteSpec() Spec {
	s := Spec{
		Name: "sum-rewrite",
		Summary: "ClickBench Q29, SUM(ResolutionWidth + c) for c = 0..89, evaluated literally vs rewritten " +
			"to SUM(x) + c*COUNT(x) by the optimiser (ClickHouse: 11.5x)",
		Params: []Param{
			{"terms", "90", "SUM expressions in the query (1..1000); 90 is ClickBench Q29"},
			{"reps", "3", "timed runs per setting, alternating, after one untimed warm-up (1..100)"},
			{"threads", "0", "engine worker threads (SET threads = N); 0 keeps the engine's default"},
		},
	}
	s.Tables = []string{"hits"}
	s.RunData = func(ctx context.Context, raw map[string]string, hooks *Hooks, db *engine.DB) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return sumRewrite(ctx, p, r, hooks, db)
		})
	}
	return s
}

// SumQuery returns ClickBench Q29 with the given number of SUM terms:
// SUM(ResolutionWidth), SUM(ResolutionWidth + 1), ... over hits. With 90
// terms it is the benchmark's query (without the trailing semicolon).
func SumQuery(terms int) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for c := range terms {
		if c > 0 {
			b.WriteString(", ")
		}
		if c == 0 {
			b.WriteString("SUM(ResolutionWidth)")
		} else {
			fmt.Fprintf(&b, "SUM(ResolutionWidth + %d)", c)
		}
	}
	b.WriteString(" FROM hits")
	return b.String()
}

// sumRewrite runs on a fresh session of db (the data directory's engine),
// so its settings do not leak into the user's session.
func sumRewrite(ctx context.Context, p *params, r *Result, hooks *Hooks, db *engine.DB) error {
	terms := p.Int("terms", 1, 1000)
	reps := p.Int("reps", 1, 100)
	threads := p.Int("threads", 0, 1024)
	if err := p.err(); err != nil {
		return err
	}
	if db == nil {
		return errors.New("no data directory: sum-rewrite reads the hits table")
	}
	sess := db.NewSession()
	var eh *engine.Hooks
	if hooks != nil {
		eh = &engine.Hooks{LockThreads: hooks.LockThreads, WorkerStart: hooks.WorkerStart, WorkerStop: hooks.WorkerStop}
	}
	exec := func(sql string, h *engine.Hooks) (*engine.Result, time.Duration, error) {
		t0 := time.Now()
		res, err := sess.Exec(ctx, sql, h)
		wall := time.Since(t0)
		if err != nil {
			return nil, 0, fmt.Errorf("%.60s: %w", sql, err)
		}
		if len(res) == 0 {
			return nil, 0, fmt.Errorf("%.60s: no result", sql)
		}
		return res[len(res)-1], wall, nil
	}
	setting := func(on bool) error {
		_, _, err := exec("SET sum_rewrite = "+strconv.FormatBool(on), nil)
		return err
	}

	if threads > 0 {
		if _, _, err := exec("SET threads = "+strconv.Itoa(threads), nil); err != nil {
			return err
		}
	}
	query := SumQuery(terms)
	data := &SumRewriteData{Threads: threads, Terms: terms, Reps: reps, Query: query}
	cnt, _, err := exec("SELECT COUNT(*) FROM hits", nil)
	if err != nil {
		return err
	}
	if cnt.Rows == 1 && len(cnt.Vecs) == 1 && len(cnt.Vecs[0].I64) == 1 {
		data.Rows = cnt.Vecs[0].I64[0]
	}

	// EXPLAIN under both settings, then one untimed run of the (cheap)
	// rewritten query, which loads the column into the cache and gives the
	// sums that every timed run of either setting must reproduce.
	for _, on := range []bool{false, true} {
		if err := setting(on); err != nil {
			return err
		}
		ex, _, err := exec("EXPLAIN "+query, nil)
		if err != nil {
			return err
		}
		if on {
			data.ExplainRewritten = explainLines(ex)
		} else {
			data.ExplainLiteral = explainLines(ex)
		}
	}
	warm, _, err := exec(query, nil)
	if err != nil {
		return err
	}
	want, err := resultRow(warm, terms)
	if err != nil {
		return fmt.Errorf("sum_rewrite=true: %w", err)
	}
	data.Sums = want
	if len(data.Sums) > 4 {
		data.Sums = append(slices.Clone(data.Sums[:3]), data.Sums[len(data.Sums)-1])
	}

	for rep := range reps {
		for _, on := range []bool{false, true} {
			if err := setting(on); err != nil {
				return err
			}
			label := fmt.Sprintf("sum_rewrite=%v, repetition %d", on, rep+1)
			if hooks != nil && hooks.RunStart != nil {
				hooks.RunStart(label, 0)
			}
			res, wall, err := exec(query, eh)
			if hooks != nil && hooks.RunEnd != nil {
				hooks.RunEnd(label)
			}
			if err != nil {
				return err
			}
			row, err := resultRow(res, terms)
			if err != nil {
				return fmt.Errorf("sum_rewrite=%v: %w", on, err)
			}
			for c := range row {
				if row[c] != want[c] {
					return fmt.Errorf("results differ: column %d is %s with sum_rewrite=%v but %s with sum_rewrite=true",
						c+1, row[c], on, want[c])
				}
			}
			if on {
				data.RewrittenNS = append(data.RewrittenNS, wall.Nanoseconds())
			} else {
				data.LiteralNS = append(data.LiteralNS, wall.Nanoseconds())
			}
		}
	}
	bestLit, bestRew := slices.Min(data.LiteralNS), slices.Min(data.RewrittenNS)
	data.Speedup = float64(bestLit) / float64(max(bestRew, 1))

	r.Data = data
	t := Table{
		Title:   fmt.Sprintf("%d SUM terms over %d rows of %s, %d alternating repetitions", terms, data.Rows, "hits", reps),
		Columns: []string{"sum_rewrite", "best", "median", "all runs", "rows/s (best)"},
	}
	for _, c := range []struct {
		name string
		ns   []int64
	}{{"false (literal)", data.LiteralNS}, {"true (rewritten)", data.RewrittenNS}} {
		sorted := slices.Sorted(slices.Values(c.ns))
		all := make([]string, len(c.ns))
		for i, v := range c.ns {
			all[i] = fmt.Sprintf("%.1f", float64(v)/1e6)
		}
		t.Rows = append(t.Rows, []string{c.name, fmtMs(sorted[0]), fmtMs(sorted[len(sorted)/2]),
			strings.Join(all, " ") + " ms", fmtRate(float64(data.Rows) / (float64(sorted[0]) / 1e9))})
	}
	r.Tables = append(r.Tables, t)
	r.Tables = append(r.Tables, explainTable("EXPLAIN with sum_rewrite = false", data.ExplainLiteral),
		explainTable("EXPLAIN with sum_rewrite = true", data.ExplainRewritten))
	r.Notes = append(r.Notes,
		fmt.Sprintf("speed-up of the rewrite here: %.2fx (best of %d each)", data.Speedup, reps),
		fmt.Sprintf("checked: both settings return the same %d sums (first: %s)", terms, strings.Join(data.Sums, ", ")),
		"the literal plan computes ResolutionWidth + c into a temporary column and sums it, once per term; the rewrite reads the column once for SUM and COUNT and adds c*COUNT per term",
		"ClickHouse (Intel's high-core-count article): rewriting sum(column + literal) into sum(column) + count(column) * literal made Q29 11.5x faster on a 2x80 vCPU system",
	)
	return nil
}

// resultRow checks that res is one row of terms columns and formats it.
func resultRow(res *engine.Result, terms int) ([]string, error) {
	if res.Rows != 1 || len(res.Vecs) != terms {
		return nil, fmt.Errorf("got %d rows x %d columns, want 1 x %d", res.Rows, len(res.Vecs), terms)
	}
	out := make([]string, terms)
	for i, v := range res.Vecs {
		if v == nil || v.Len != 1 {
			return nil, fmt.Errorf("column %d has no value", i+1)
		}
		out[i] = v.Format(0)
	}
	return out, nil
}

// explainLines renders an EXPLAIN result: its plan tree when it has one,
// else its rows (one string column, or all columns joined by spaces).
func explainLines(res *engine.Result) []string {
	var lines []string
	if res.Plan != nil {
		var walk func(n *engine.PlanNode, depth int)
		walk = func(n *engine.PlanNode, depth int) {
			indent := strings.Repeat("  ", depth)
			lines = append(lines, indent+n.Name)
			for _, d := range n.Detail {
				lines = append(lines, indent+"    "+d)
			}
			for _, c := range n.Children {
				walk(c, depth+1)
			}
		}
		walk(res.Plan, 0)
		return lines
	}
	for i := range res.Rows {
		cells := make([]string, len(res.Vecs))
		for j, v := range res.Vecs {
			cells[j] = v.Format(i)
		}
		lines = append(lines, strings.Split(strings.Join(cells, " "), "\n")...)
	}
	return lines
}

// explainTable puts plan lines in a one-column table, eliding the middle of
// very long plans (90 near-identical aggregate lines) and clipping very
// long lines; the JSON data keeps them whole.
func explainTable(title string, lines []string) Table {
	t := Table{Title: title, Columns: []string{"plan"}}
	const keep = 12
	for i, l := range lines {
		if len(lines) > 2*keep && i == keep {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("... %d more lines ...", len(lines)-2*keep)})
		}
		if len(lines) > 2*keep && i >= keep && i < len(lines)-keep {
			continue
		}
		t.Rows = append(t.Rows, []string{clip(l, 160)})
	}
	return t
}

// clip shortens s to about n bytes for display, saying how much it cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s ... (%d more bytes)", s[:cut], len(s)-cut)
}
