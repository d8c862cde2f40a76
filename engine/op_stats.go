package engine

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// statsAggOp is an ungrouped aggregate answered from the row groups'
// statistics, without reading a value: MIN and MAX of integer and date
// columns, and COUNT(*), over a whole Parquet table. The planner computes
// the one row when it builds the operator (the footer is in memory) and
// builds it only when every row group's statistics answer every MIN and
// MAX (or say the chunk holds only NULLs); otherwise the table is scanned
// as usual.
type statsAggOp struct {
	opBase
	aggNames  []string
	out       *vec.Batch
	rowGroups int // row groups with rows
	allNull   int // chunks the statistics say hold only NULLs
	done      atomic.Bool
}

func (s *statsAggOp) detail() []string {
	d := []string{"aggregates: " + strings.Join(s.aggNames, ", ")}
	line := fmt.Sprintf("answered from row-group statistics (min_value, max_value) of %s: no values read", plural(s.rowGroups, "row group"))
	if s.allNull > 0 {
		line += fmt.Sprintf("; %s of NULLs only", plural(s.allNull, "column chunk"))
	}
	return append(d, line)
}

func (s *statsAggOp) next(x *execCtx, w int) (*vec.Batch, error) {
	if s.done.Swap(true) {
		return nil, nil
	}
	t0 := time.Now()
	defer s.stats.since(t0)
	s.stats.rowsOut.Add(1)
	return s.out, nil
}

// statsAggregate returns the operator that answers q from the row-group
// statistics of its table, or nil when q is not an ungrouped aggregate
// without WHERE over a table whose aggregates are all MIN or MAX of a
// column (at least one) or COUNT(*), or when a row group's statistics do
// not answer one of them.
func (s *Session) statsAggregate(q *query) operator {
	sc := q.rel.scan
	if sc == nil || !q.grouped || len(q.keys) != 0 || q.where != nil || len(q.specs) == 0 {
		return nil
	}
	minMax := false
	for i, sp := range q.specs {
		switch {
		case sp.Kind == agg.CountStar:
		case sp.Kind == agg.Min && q.aggCalls[i].Name == "min", sp.Kind == agg.Max && q.aggCalls[i].Name == "max":
			ref, ok := q.args[i].(*expr.ColumnRef)
			if !ok || ref.Index < 0 || ref.Index >= len(sc.table.Columns) || ref.T != sc.table.Columns[ref.Index].Type {
				return nil
			}
			minMax = true
		default:
			return nil
		}
	}
	if !minMax {
		return nil
	}
	rd, err := s.db.catalog.Open(sc.table)
	if err != nil {
		return nil // the scan reports it
	}
	defer rd.Close()
	type acc struct {
		lo, hi int64
		any    bool
	}
	accs := make([]acc, len(q.specs))
	op := &statsAggOp{opBase: opBase{label: "UNGROUPED_AGGREGATE"}, aggNames: q.aggNames}
	var rows int64
	for g, n := range sc.table.RowGroupRows {
		if n == 0 {
			continue
		}
		rows += n
		op.rowGroups++
		for i, sp := range q.specs {
			if sp.Kind == agg.CountStar {
				continue
			}
			b := rd.StatBounds(g, q.args[i].(*expr.ColumnRef).Index)
			switch {
			case !b.OK:
				return nil
			case b.AllNull:
				op.allNull++
			case !accs[i].any:
				accs[i] = acc{lo: b.Min, hi: b.Max, any: true}
			default:
				accs[i].lo = min(accs[i].lo, b.Min)
				accs[i].hi = max(accs[i].hi, b.Max)
			}
		}
	}
	out := &vec.Batch{Len: 1}
	for i, sp := range q.specs {
		v := vec.NewVector(sp.OutType(), 1)
		switch {
		case sp.Kind == agg.CountStar:
			v.AppendInt(rows)
		case !accs[i].any:
			v.AppendNull()
		case sp.Kind == agg.Min:
			v.AppendInt(accs[i].lo)
		default:
			v.AppendInt(accs[i].hi)
		}
		out.Vecs = append(out.Vecs, v)
	}
	op.out = out
	return op
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
