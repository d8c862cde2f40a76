package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// filterStage is one column of a streamed scan's filter and the
// conjuncts that read it alone. A filter all of whose conjuncts read one
// column each (CounterID = 62 AND IsRefresh = 0 AND DontCountHits = 0)
// is evaluated a stage at a time (stagedFilter): the first stage's
// column is converted for the whole morsel and tested; each next one is
// read for the rows left only (ColumnStream.NextSel picks their values
// out of its pages), and tested over them. Before, every filter column
// was converted whole and the conjuncts evaluated over the morsel: at
// ClickBench's CounterID = 62, which passes one row in fourteen, 93 % of
// the other columns' values were widened and tested for nothing.
type filterStage struct {
	col   int
	terms []expr.Expr
	f     *expr.Filter
	eq    intEq // f as one col = constant, where it is that
	// in and out count the rows the stage tested and passed: the stages
	// run in the order of their pass rates, lowest first.
	in, out atomic.Int64
}

// rate returns the share of the rows tested that passed, 0 before any
// was tested (so that an untested stage runs early and is measured).
func (st *filterStage) rate() float64 {
	in := st.in.Load()
	if in == 0 {
		return 0
	}
	return float64(st.out.Load()) / float64(in)
}

// planFilterStages returns the stages of the conjuncts terms, one per
// column of cols, when each conjunct reads one column of cols and cols
// has two columns at least; nil otherwise.
func planFilterStages(terms []expr.Expr, cols []int) []*filterStage {
	if len(cols) < 2 {
		return nil
	}
	by := map[int]*filterStage{}
	var stages []*filterStage
	for _, t := range terms {
		cs := slices.Compact(slices.Sorted(slices.Values(expr.Columns(t))))
		if len(cs) != 1 || !slices.Contains(cols, cs[0]) {
			return nil
		}
		st := by[cs[0]]
		if st == nil {
			st = &filterStage{col: cs[0]}
			by[cs[0]] = st
			stages = append(stages, st)
		}
		st.terms = append(st.terms, t)
	}
	if len(stages) != len(cols) {
		return nil // a column no conjunct reads
	}
	for _, st := range stages {
		st.f = expr.NewFilterOf(st.terms)
		st.eq = intEqOf(st.f)
	}
	return stages
}

// stageOrder returns stages in the order a morsel evaluates them: by
// their pass rates so far, lowest first.
func stageOrder(stages []*filterStage) []*filterStage {
	order := slices.Clone(stages)
	rates := make(map[*filterStage]float64, len(order))
	for _, st := range order {
		rates[st] = st.rate()
	}
	slices.SortStableFunc(order, func(a, b *filterStage) int { return cmp.Compare(rates[a], rates[b]) })
	return order
}

// stagedFilter evaluates the filter whose stages are stages (see
// filterStage) over the streamed morsel b, reading their columns into b,
// and returns the rows that pass (not nil), and which of the stages' columns b
// then holds for those rows only (compact): those read after a stage
// that failed a row. The others b holds for the morsel's rows.
func (s *scanOp) stagedFilter(x *execCtx, c *scanCursor, b *vec.Batch, stages []*filterStage) (rows []int32, compact []int, err error) {
	n := b.Len
	t0 := time.Now()
	defer func() { s.decodeNanos.Add(int64(time.Since(t0))) }()
	order := stageOrder(stages)
	all := true // rows is every row of the morsel
	for i, st := range order {
		var v *vec.Vector
		var kept []int32
		tested := n
		if all {
			eq := false
			if st.eq.ok && st.eq.col == st.col && slices.Contains(s.filterOnly, st.col) {
				// col = constant on a column no operator above reads:
				// its stored integers are compared where they lie,
				// never converted.
				if kept, eq, err = c.streams[st.col].NextEq(x.ctx, n, st.eq.c); err != nil {
					return nil, nil, err
				}
			}
			if !eq {
				if v, err = c.streams[st.col].Next(x.ctx, n); err != nil {
					return nil, nil, err
				}
				b.Vecs[st.col] = v
				if kept, err = s.filterWith(x, st.f, b); err != nil {
					return nil, nil, err
				}
			}
		} else {
			if v, err = c.streams[st.col].NextSel(x.ctx, n, rows); err != nil {
				return nil, nil, err
			}
			b.Vecs[st.col] = v
			compact = append(compact, st.col)
			m := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(rows)}
			m.Vecs[st.col] = v
			if kept, err = s.filterWith(x, st.f, m); err != nil {
				return nil, nil, err
			}
			tested = len(rows)
		}
		st.in.Add(int64(tested))
		st.out.Add(int64(len(kept)))
		switch {
		case len(kept) == tested:
			continue
		case all:
			rows, all = kept, false // not s.ident: fewer than n
		default:
			left := make([]int32, len(kept))
			for i, k := range kept {
				left[i] = rows[k]
			}
			rows = left
			for _, j := range compact {
				b.Vecs[j] = gather(b.Vecs[j], kept)
			}
		}
		if len(rows) == 0 {
			for _, later := range order[i+1:] {
				if err := c.streams[later.col].Skip(x.ctx, n); err != nil {
					return nil, nil, err
				}
			}
			return []int32{}, compact, nil // not nil: nil is every row
		}
	}
	if all {
		return s.ident[:n], nil, nil
	}
	return rows, compact, nil
}

// stagesDetail is the EXPLAIN line of a filter evaluated in stages; ""
// before any morsel was.
func (s *scanOp) stagesDetail(stages []*filterStage) string {
	var parts []string
	for _, st := range stageOrder(stages) {
		in := st.in.Load()
		if in == 0 {
			continue
		}
		terms := make([]string, len(st.terms))
		for i, t := range st.terms {
			terms[i] = t.String()
		}
		parts = append(parts, fmt.Sprintf("%s (%d rows tested, %.1f %% passed)", strings.Join(terms, " AND "), in, 100*st.rate()))
	}
	if len(parts) == 0 {
		return ""
	}
	return "filter tested a column at a time, each next column read for the rows left only: " + strings.Join(parts, ", then ")
}
