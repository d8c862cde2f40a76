package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"cachebook/engine"
)

func TestCachesimCell(t *testing.T) {
	x := newEngineExecutor(t)
	// A 2 KiB table is 32 lines: exactly 32 misses at every level,
	// whatever the machine.
	reply, err := x.Execute(context.Background(), Cell{Kind: KindCachesim, Source: "hashprobe size=2K n=10000",
		Attrs: map[string]string{"l1": "32K", "l2": "1M", "l3": "32M"}}, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	res := reply.Outcome.Data[MIMEModel].(*CachesimResult)
	if len(res.Levels) != 3 || res.Levels[0].Misses != 32 || res.Levels[2].Misses != 32 || res.Levels[0].Accesses != 10000 {
		t.Errorf("levels %+v", res.Levels)
	}
	text := reply.Outcome.Data[MIMEText].(string)
	for _, want := range []string{"modelled", "L1d 32KiB", "L3 32MiB", "every set"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []Cell{
		{Kind: KindCachesim, Source: "zigzag"},
		{Kind: KindCachesim, Source: ""},
		{Kind: KindCachesim, Source: "random size=100"},
		{Kind: KindCachesim, Source: "random", Attrs: map[string]string{"l1": "33K"}},
		{Kind: KindCachesim, Source: "random", Attrs: map[string]string{"sample": "1/3"}},
	} {
		if _, err := x.Execute(context.Background(), bad, nil); err == nil {
			t.Errorf("%q %v: no error", bad.Source, bad.Attrs)
		} else if f := (*Failure)(nil); !errors.As(err, &f) {
			t.Errorf("%q: %v is not a cell failure", bad.Source, err)
		}
	}
}

func TestSQLCountersModel(t *testing.T) {
	x := newEngineExecutor(t)
	for _, strategy := range []string{"naive", "radix"} {
		reply, err := x.Execute(context.Background(), Cell{Source: "SET group_by = '" + strategy + "'; SELECT UserID, count(*) FROM hits GROUP BY UserID; SELECT RegionID, min(UserID) FROM hits GROUP BY RegionID",
			Attrs: map[string]string{"counters": "model", "l3": "8M", "dram_ns": "90"}}, nil)
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		rep := reply.Outcome.Data[MIMEModel].(*ModelReport)
		if len(rep.Queries) != 2 {
			t.Fatalf("%s: %d modelled queries, want 2", strategy, len(rep.Queries))
		}
		q := rep.Queries[0]
		if !q.Modelled || q.Strategy != strategy || q.Rows == 0 || q.Groups == 0 || q.Total.L1Misses == 0 || q.Total.DRAMReads == 0 || q.MeasuredNs <= 0 || q.MLP <= 0 {
			t.Errorf("%s: %+v", strategy, q)
		}
		if strategy == "radix" && len(q.Phases) < 2 {
			t.Errorf("radix phases %+v", q.Phases)
		}
		if q := rep.Queries[1]; !q.Modelled || q.Strategy != strategy+" (generic)" || q.Groups == 0 {
			t.Errorf("%s min(): %+v, want the generic path modelled", strategy, q)
		}
		text := reply.Outcome.Data[MIMEText].(string)
		for _, want := range []string{"modelled (cachesim), not measured", "L3 8MiB", "modelled DRAM lines read", "implied memory-level parallelism"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: text lacks %q:\n%s", strategy, want, text)
			}
		}
	}
	if _, err := x.Execute(context.Background(), Cell{Source: "SELECT 1", Attrs: map[string]string{"counters": "model", "l2": "1000K"}}, nil); err == nil {
		t.Error("bad geometry accepted")
	}
	// String keys and several keys take the generic path, with either
	// strategy; the model makes as many groups as the query returns.
	for _, c := range []struct{ strategy, sql, label string }{
		{"naive", "SELECT URL, count(*) FROM hits GROUP BY URL", "naive (generic, string key)"},
		{"radix", "SELECT URL, count(*) FROM hits GROUP BY URL", "radix (generic, string key)"},
		{"radix", "SELECT RegionID, UserID, count(*) FROM hits GROUP BY RegionID, UserID", "radix (generic, 2 keys)"},
		{"naive", "SELECT RegionID, UserID, count(*) FROM hits GROUP BY RegionID, UserID", "naive (generic, 2 keys)"},
	} {
		reply, err := x.Execute(context.Background(), Cell{Source: "SET group_by = '" + c.strategy + "'; " + c.sql, Attrs: map[string]string{"counters": "model"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if q := reply.Outcome.Data[MIMEModel].(*ModelReport).Queries; len(q) != 1 || !q[0].Modelled || q[0].Strategy != c.label ||
			q[0].Groups == 0 || q[0].Rows == 0 || q[0].Total.L1Misses == 0 {
			t.Errorf("%s: %+v", c.label, q)
		} else if want := reply.Outcome.Data[MIMEResult].(*ResultBundle).Statements[1].RowCount; q[0].Groups != want {
			t.Errorf("%s: modelled %d groups, the query returned %d", c.label, q[0].Groups, want)
		}
	}
}

func TestSetCountersModel(t *testing.T) {
	x := newEngineExecutor(t)
	const q = "SELECT UserID, count(*) FROM hits GROUP BY UserID"
	modelled := func(src string) bool {
		t.Helper()
		reply, err := x.Execute(context.Background(), Cell{Source: src}, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		rep, ok := reply.Outcome.Data[MIMEModel].(*ModelReport)
		return ok && len(rep.Queries) == 1 && rep.Queries[0].Modelled
	}
	if modelled(q) {
		t.Error("modelled before SET counters")
	}
	if !modelled("SET counters = 'model'; " + q) {
		t.Error("SET counters = 'model' in the cell: not modelled")
	}
	if !modelled(q) {
		t.Error("the setting did not last to the next cell")
	}
	if !modelled("SET group_by = 'parallel'; SET threads = 3; " + q + "; SET group_by = 'auto'") {
		t.Error("parallel: not modelled")
	}
	if modelled("SET counters = 'off'; " + q) {
		t.Error("modelled after SET counters = 'off'")
	}
	if _, err := x.Execute(context.Background(), Cell{Source: "SET counters = 'on'"}, nil); err == nil {
		t.Error("SET counters = 'on' accepted: perf counters are a cell attribute")
	}
}

// TestExplainAnalyzeModel: EXPLAIN ANALYZE with counters=model prints the
// modelled misses per row, in total and per phase, on the aggregate's own
// node of the plan tree, with the figures of the model report.
func TestExplainAnalyzeModel(t *testing.T) {
	x := newEngineExecutor(t)
	reply, err := x.Execute(context.Background(), Cell{Source: "SET group_by = 'radix'; EXPLAIN ANALYZE SELECT UserID, count(*) FROM hits GROUP BY UserID",
		Attrs: map[string]string{"counters": "model"}}, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	rep := reply.Outcome.Data[MIMEModel].(*ModelReport)
	if len(rep.Queries) != 1 || !rep.Queries[0].Modelled || rep.Queries[0].Op == 0 {
		t.Fatalf("model report %+v", rep.Queries)
	}
	q := rep.Queries[0]
	text := reply.Outcome.Data[MIMEText].(string)
	node := strings.Index(text, "HASH_GROUP_BY")
	scan := strings.Index(text, "SEQ_SCAN")
	total := fmt.Sprintf("DRAM %.3f lines/row read", float64(q.Total.DRAMReads)/float64(q.Rows))
	for _, want := range []string{"│ modelled (cache model, not counters; ±", "│ modelled phase partition: L1d", "│ modelled phase aggregate: L1d", total} {
		i := strings.Index(text, want)
		if i < 0 || i < node || (scan > node && i > scan) {
			t.Errorf("plan text lacks %q under HASH_GROUP_BY (before SEQ_SCAN):\n%s", want, text)
		}
	}
	// The plan tree in the result carries the lines too.
	bundle := reply.Outcome.Data[MIMEResult].(*ResultBundle)
	plan := bundle.Statements[len(bundle.Statements)-1].Plan
	var found bool
	var walk func(n *engine.PlanNode)
	walk = func(n *engine.PlanNode) {
		found = found || (n.Op == q.Op && len(n.Modelled) == 3)
		for _, c := range n.Children {
			walk(c)
		}
	}
	if plan != nil {
		walk(plan)
	}
	if !found {
		t.Errorf("no plan node with op %d and its 3 modelled lines", q.Op)
	}
}
