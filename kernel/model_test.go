package kernel

import (
	"context"
	"errors"
	"strings"
	"testing"
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
	// A string key is not traced: the report says so.
	reply, err := x.Execute(context.Background(), Cell{Source: "SELECT URL, count(*) FROM hits GROUP BY URL", Attrs: map[string]string{"counters": "model"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q := reply.Outcome.Data[MIMEModel].(*ModelReport).Queries; len(q) != 1 || q[0].Modelled || q[0].Why == "" {
		t.Errorf("string key: %+v", q)
	}
}
