package engine

import (
	"context"
	"strings"
	"testing"

	"cachebook/engine/agg"
)

// TestAnnotatePlan: a caller that recorded a GROUP BY's operator (the
// Aggregate hook's Op) adds lines to that node after the run, and the
// text of EXPLAIN ANALYZE shows them under it.
func TestAnnotatePlan(t *testing.T) {
	s := testDB(t).NewSession()
	var ops []uint64
	hooks := &Hooks{Aggregate: func(info AggregateInfo, src agg.Source) agg.Source {
		ops = append(ops, info.Op)
		return src
	}}
	res, err := s.Exec(context.Background(), "EXPLAIN ANALYZE SELECT k, count(*) FROM t GROUP BY k", hooks)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0] == 0 {
		t.Fatalf("aggregate ops %v, want one non-zero id", ops)
	}
	r := res[0]
	if r.AnnotatePlan(ops[0]+1000, []string{"nowhere"}) {
		t.Error("annotated an operator that is not in the plan")
	}
	if !r.AnnotatePlan(ops[0], []string{"modelled: L1d 0.5 misses/row"}) {
		t.Fatal("the aggregate's operator is not in the plan")
	}
	var lines []string
	for i := range r.Rows {
		lines = append(lines, string(r.Vecs[0].Str(i)))
	}
	text := strings.Join(lines, "\n")
	i, j := strings.Index(text, "HASH_GROUP_BY"), strings.Index(text, "│ modelled: L1d 0.5 misses/row")
	k := strings.Index(text, "SEQ_SCAN")
	if i < 0 || j < i || (k >= 0 && k < j) {
		t.Errorf("modelled line not under the aggregate's node:\n%s", text)
	}
	// A query's own plan carries it too, without a text to render.
	res, err = s.Exec(context.Background(), "SELECT k, count(*) FROM t GROUP BY k", hooks)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].AnnotatePlan(ops[1], []string{"x"}) || res[0].Rows != 10 {
		t.Errorf("plain query: annotated rows %d", res[0].Rows)
	}
}
