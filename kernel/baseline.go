package kernel

import (
	"fmt"
	"slices"
	"strconv"

	"cachebook/kernel/perf"
)

// This file estimates how much of a query's time went to waiting on
// memory, from the cell's own numbers: an sql cell with baseline=N names
// its Nth query (counting those that return a table, as elapsed(N) does)
// as the same work over a table that stays in cache, and every other
// query that scanned rows gets
//
//	waiting share ≈ 1 − baseline ns/row ÷ this query's ns/row,
//
// the part of its time per row that the in-cache run did without. With
// reps=N it is the median over the rounds, with their spread. It is
// printed for every runtime and, where counters were collected, added to
// them beside "CPUs utilized", which counts this waiting as busy.

// MetricWaiting names the derived metric of the waiting share.
const MetricWaiting = "waiting-on-memory"

// waitShare is the estimate for one query.
type waitShare struct {
	query                 int // 1-based, as in elapsed(N)
	share, low, high      float64
	rounds                int
	baseNsRow, queryNsRow float64 // the last round's
}

// baselineOf returns the query number a cell's baseline attribute names,
// 0 without one.
func baselineOf(cell Cell) (int, error) {
	v, ok := cell.Attrs["baseline"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, &CellError{Ename: ErrExecution, Err: fmt.Errorf("attribute baseline=%s: want the number of the in-cache query (1 for the first statement that returns a table)", v)}
	}
	return n, nil
}

// waitingShares computes the estimate for every query of out but the
// baseline base.
func waitingShares(out *Outcome, base int) ([]waitShare, error) {
	rounds, err := predictRounds(out)
	if err != nil || len(rounds) == 0 {
		return nil, err
	}
	last := rounds[len(rounds)-1].Queries
	if base > len(last) {
		return nil, fmt.Errorf("baseline=%d: the cell ran %d queries", base, len(last))
	}
	if last[base-1].Scanned <= 0 {
		return nil, fmt.Errorf("baseline=%d: that query read no table rows", base)
	}
	perRow := func(q int, r int) float64 {
		x := rounds[r].Queries[q]
		return float64(x.ElapsedNs) / float64(x.Scanned)
	}
	var out2 []waitShare
	for q := range last {
		if q == base-1 || last[q].Scanned <= 0 {
			continue
		}
		vals := make([]float64, len(rounds))
		for r := range rounds {
			vals[r] = 1 - perRow(base-1, r)/perRow(q, r)
		}
		slices.Sort(vals)
		med := vals[len(vals)/2]
		if len(vals)%2 == 0 {
			med = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
		}
		out2 = append(out2, waitShare{query: q + 1, share: med, low: vals[0], high: vals[len(vals)-1], rounds: len(vals),
			baseNsRow: perRow(base-1, len(rounds)-1), queryNsRow: perRow(q, len(rounds)-1)})
	}
	return out2, nil
}

// String says the estimate in words, for the cell's output.
func (w waitShare) String() string {
	if w.share <= 0 {
		return fmt.Sprintf("waiting on memory: query %d took no longer per row than the in-cache baseline (%.1f against %.1f ns per row): nothing to attribute to memory here", w.query, w.queryNsRow, w.baseNsRow)
	}
	spread := ""
	if w.rounds > 1 {
		spread = fmt.Sprintf(" (%.0f–%.0f %% over %d alternating runs)", 100*max(w.low, 0), 100*w.high, w.rounds)
	}
	return fmt.Sprintf("waiting on memory: about %.0f %% of query %d's time%s went beyond what the same rows cost with the in-cache table of the baseline query (%.1f against %.1f ns per row). The core counts as busy all the while: CPUs utilized does not see this waiting.",
		100*w.share, w.query, spread, w.queryNsRow, w.baseNsRow)
}

// addWaiting adds the estimate of the cell's slowest query to a counter
// report's derived metrics, beside cpus-utilized.
func addWaiting(counters any, shares []waitShare) {
	rep, ok := counters.(*perf.Report)
	if !ok || rep == nil || len(shares) == 0 {
		return
	}
	w := shares[0]
	for _, s := range shares[1:] {
		if s.queryNsRow > w.queryNsRow {
			w = s
		}
	}
	rep.Total.Derived = append(rep.Total.Derived, perf.Metric{Name: MetricWaiting, Value: max(w.share, 0), Unit: "fraction",
		Desc:   fmt.Sprintf("estimated share of query %d's time spent waiting on memory: 1 − in-cache ns/row ÷ its ns/row", w.query),
		Inputs: []string{"elapsed", "baseline"}})
}
