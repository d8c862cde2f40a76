package experiment

import (
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/engine/vec"
)

func TestSumQueryIsQ29(t *testing.T) {
	q := SumQuery(90)
	if !strings.HasPrefix(q, "SELECT SUM(ResolutionWidth), SUM(ResolutionWidth + 1), SUM(ResolutionWidth + 2), ") {
		t.Errorf("bad start: %.90s", q)
	}
	if !strings.HasSuffix(q, ", SUM(ResolutionWidth + 88), SUM(ResolutionWidth + 89) FROM hits") {
		t.Errorf("bad end: %s", q[len(q)-80:])
	}
	if n := strings.Count(q, "SUM("); n != 90 {
		t.Errorf("%d SUM terms, want 90", n)
	}
}

func TestResultRowAndExplain(t *testing.T) {
	mk := func(vals ...int64) *engine.Result {
		r := &engine.Result{Rows: 1}
		for _, v := range vals {
			x := vec.NewVector(vec.Int64, 1)
			x.AppendInt(v)
			r.Vecs = append(r.Vecs, x)
		}
		return r
	}
	row, err := resultRow(mk(10, 12), 2)
	if err != nil || strings.Join(row, ",") != "10,12" {
		t.Errorf("resultRow = %v, %v", row, err)
	}
	if _, err := resultRow(mk(10), 2); err == nil {
		t.Error("a short row was accepted")
	}
	plan := &engine.Result{Plan: &engine.PlanNode{Name: "PROJECTION", Detail: []string{"sum(x) + 1*count(x)"},
		Children: []*engine.PlanNode{{Name: "SCAN hits"}}}}
	got := strings.Join(explainLines(plan), "|")
	if got != "PROJECTION|    sum(x) + 1*count(x)|  SCAN hits" {
		t.Errorf("explainLines = %q", got)
	}
	lines := make([]string, 100)
	tb := explainTable("t", lines)
	if len(tb.Rows) != 25 {
		t.Errorf("a 100-line plan shows %d rows, want 12 + elision + 12", len(tb.Rows))
	}
}
