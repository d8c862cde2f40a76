package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cachebook/engine/sql"
	"cachebook/engine/units"
	"cachebook/engine/vec"
)

// explain answers EXPLAIN (the operator tree) and EXPLAIN ANALYZE (the same
// tree after running the statement, with each operator's rows, time,
// phases and memory).
func (s *Session) explain(ctx context.Context, e *sql.Explain, hooks *Hooks) (*Result, error) {
	sel, ok := e.Stmt.(*sql.Select)
	if !ok {
		return nil, posErr(e.Pos(), "EXPLAIN supports SELECT statements only")
	}
	var root *PlanNode
	if e.Analyze {
		r, err := s.selectStmt(ctx, sel, hooks)
		if err != nil {
			return nil, err
		}
		root = r.Plan
	} else {
		q, err := s.planSelect(ctx, sel, 0)
		if err != nil {
			return nil, err
		}
		root = planTree(q.root, false)
	}
	vecs := planText(root, e.Analyze)
	return &Result{Columns: []vec.Column{{Name: "plan", Type: vec.String}}, Vecs: vecs, Rows: vecs[0].Len, Plan: root, explain: e.Analyze}, nil
}

// planLines renders an analyzed plan as the one column of EXPLAIN ANALYZE.
func planLines(root *PlanNode) []*vec.Vector { return planText(root, true) }

func planText(root *PlanNode, analyze bool) []*vec.Vector {
	lines := emptyVec(vec.String)
	for _, l := range strings.Split(strings.TrimRight(FormatPlan(root, analyze), "\n"), "\n") {
		lines.AppendStr([]byte(l))
	}
	return []*vec.Vector{lines}
}

// planTree renders the operator tree under op as PlanNodes; with ran, the
// operators' measurements are filled in.
func planTree(op operator, ran bool) *PlanNode {
	b := op.base()
	n := &PlanNode{Name: b.label, Detail: op.detail()}
	if ran {
		n.Op = b.id
		st := &b.stats
		n.Rows = st.rowsOut.Load()
		n.RowsIn = st.rowsIn.Load()
		n.Time = time.Duration(st.nanos.Load())
		n.PeakBytes = st.memPeak.Load()
		st.mu.Lock()
		n.Phases = append([]PhaseStat(nil), st.phases...)
		n.Workers = append([]WorkerStat(nil), st.workers...)
		st.mu.Unlock()
	}
	for _, c := range b.children {
		n.Children = append(n.Children, planTree(c, ran))
	}
	return n
}

// FormatPlan renders a plan tree as indented text; with analyze it adds the
// measured rows and times, per phase and per worker.
func FormatPlan(root *PlanNode, analyze bool) string {
	var b strings.Builder
	var walk func(n *PlanNode, depth int)
	walk = func(n *PlanNode, depth int) {
		ind := strings.Repeat("  ", depth)
		b.WriteString(ind + n.Name)
		if analyze {
			fmt.Fprintf(&b, "  (rows %d, %s", n.Rows, fmtDur(n.Time))
			if n.RowsIn != n.Rows && len(n.Children) > 0 || n.Name == "SEQ_SCAN" {
				fmt.Fprintf(&b, ", in %d", n.RowsIn)
			}
			if n.PeakBytes > 0 {
				fmt.Fprintf(&b, ", peak %s", units.HumanBytes(n.PeakBytes))
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
		for _, d := range n.Detail {
			b.WriteString(ind + "  │ " + d + "\n")
		}
		if analyze {
			for _, p := range n.Phases {
				fmt.Fprintf(&b, "%s  │ phase %s: rows %d, %s\n", ind, p.Name, p.Rows, fmtDur(p.Time))
			}
			if len(n.Workers) > 1 {
				for _, w := range n.Workers {
					fmt.Fprintf(&b, "%s  │   worker %d %s: rows %d, %s\n", ind, w.Worker, w.Phase, w.Rows, fmtDur(w.Time))
				}
			}
			for _, m := range n.Modelled {
				b.WriteString(ind + "  │ " + m + "\n")
			}
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	if analyze && len(root.Children) > 0 {
		// Operators pull their input, so times nest: without this line the
		// phases of an aggregate and the scan below it seem to add up to
		// more than the statement took.
		b.WriteString("times are inclusive: an operator's time, and the first phase of an aggregate, include pulling rows from the operators below it\n")
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/1e6)
}
