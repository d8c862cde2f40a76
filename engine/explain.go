package engine

import (
	"fmt"
	"strings"
	"time"
)

// planTree builds the operator tree of a planned query, bottom up.
func (q *query) planTree() *PlanNode {
	node := q.rel.node
	if q.where != nil {
		node = &PlanNode{Name: "FILTER", Detail: []string{q.where.String()}, Children: []*PlanNode{node}}
	}
	if q.grouped {
		var d []string
		if len(q.keys) > 0 {
			d = append(d, "keys: "+strings.Join(q.keyNames, ", "))
		}
		if len(q.aggNames) > 0 {
			d = append(d, "aggregates: "+strings.Join(q.aggNames, ", "))
		}
		if q.rewritten > 0 {
			d = append(d, fmt.Sprintf("sum_rewrite: %d sum(x + c) rewritten to sum(x) + c * count(x)", q.rewritten))
		}
		name := "HASH_GROUP_BY"
		if len(q.keys) == 0 {
			name = "UNGROUPED_AGGREGATE"
		}
		node = &PlanNode{Name: name, Detail: d, Children: []*PlanNode{node}}
		if q.having != nil {
			node = &PlanNode{Name: "HAVING", Detail: []string{q.having.String()}, Children: []*PlanNode{node}}
		}
	}
	if len(q.order) > 0 {
		var keys []string
		for _, o := range q.order {
			k := q.cols[o.col].Name
			if o.desc {
				k += " DESC"
			}
			keys = append(keys, k)
		}
		name := "ORDER_BY"
		if q.limit >= 0 {
			name = "TOP_N"
			keys = append(keys, fmt.Sprintf("top %d", q.limit+q.offset))
		}
		node = &PlanNode{Name: name, Detail: keys, Children: []*PlanNode{node}}
	}
	if q.limit >= 0 || q.offset > 0 {
		d := fmt.Sprintf("limit %d offset %d", q.limit, q.offset)
		if q.limit < 0 {
			d = fmt.Sprintf("offset %d", q.offset)
		}
		node = &PlanNode{Name: "LIMIT", Detail: []string{d}, Children: []*PlanNode{node}}
	}
	var cols []string
	for _, c := range q.cols[:q.nVisible] {
		cols = append(cols, c.Name)
	}
	return &PlanNode{Name: "PROJECTION", Detail: cols, Children: []*PlanNode{node}}
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
			fmt.Fprintf(&b, "  (rows %d, %s)", n.Rows, fmtDur(n.Time))
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
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	return b.String()
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/1e6)
}
