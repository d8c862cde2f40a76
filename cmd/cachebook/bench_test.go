package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"cachebook/engine"
)

func TestGoHeapNote(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		free    bool
	}{
		{"", false},
		{"madvdontneed=0", true},
		{"gctrace=1, madvdontneed=0", true},
		{"madvdontneed=0,madvdontneed=1", false},
		{"madvdontneed=1", false},
		{"xmadvdontneed=0", false},
	} {
		got := goHeapNote(tc.godebug)
		if strings.Contains(got, "MADV_FREE") != tc.free {
			t.Errorf("goHeapNote(%q) = %q, want MADV_FREE: %v", tc.godebug, got, tc.free)
		}
	}
}

// TestDuckClientKilled checks that a duckbench process killed mid-request
// (as the out-of-memory killer does) is reported as killed, not as a
// broken pipe, and that closing the client afterwards does not hang.
func TestDuckClientKilled(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "duckbench")
	script := "#!/bin/sh\necho '{\"op\":\"hello\",\"ok\":true,\"duckdb\":\"v0\",\"protocol\":1,\"threads\":1}'\nread line\nkill -9 $$\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dc, err := startDuck(context.Background(), fake)
	if err != nil {
		t.Fatal(err)
	}
	err = dc.load("hits.parquet", "hits", []string{"UserID"})
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("load error = %v, want a kill", err)
	}
	if _, err2 := dc.query("SELECT 1", 1); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("query after the kill: %v", err2)
	}
	if err := dc.close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestSpilledBytes(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int64
	}{
		{"128 partitions, 415.0 MiB in 256 files to /tmp/x, write 1.0 ms, read back 2.0 ms", 415 << 20},
		{"2 partitions, 1.5 GiB in 4 files to /tmp/x", 3 << 29},
		{"1 partitions, 512 B in 2 files to /tmp/x", 512},
		{"3 partitions, 4.0KiB in 6 files to /tmp/x", 4 << 10},
		{"16 partitions too large for memory were split 16 ways on further hash bits", 0},
		{"", 0},
	} {
		if got := spilledBytes(tc.line); got != tc.want {
			t.Errorf("spilledBytes(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
}

func TestSpillLine(t *testing.T) {
	agg := &engine.PlanNode{Name: "HASH_GROUP_BY", Detail: []string{"keys: UserID",
		"spilled: 8 partitions, 1.0 MiB in 16 files to /tmp/x", "spilled: 1 partitions too large for memory were split 16 ways"}}
	plan := &engine.PlanNode{Name: "UNGROUPED_AGGREGATE", Children: []*engine.PlanNode{{Name: "SUBQUERY",
		Children: []*engine.PlanNode{agg}}}}
	if got, want := spillLine(plan), "8 partitions, 1.0 MiB in 16 files to /tmp/x"; got != want {
		t.Errorf("spillLine = %q, want %q", got, want)
	}
	agg.Detail = agg.Detail[:1]
	if got := spillLine(plan); got != "" {
		t.Errorf("spillLine of a plan that did not spill = %q", got)
	}
	if got := spillLine(nil); got != "" {
		t.Errorf("spillLine(nil) = %q", got)
	}
}

// TestBenchReportSpill checks that the spill rows reach the markdown table
// and survive a round trip through the JSON report.
func TestBenchReportSpill(t *testing.T) {
	rep := &benchReport{Rows: 20_000_000, Order: "shuffled", Reps: 5, Spill: []spillRow{
		{Query: "Q17 spill", Engine: "cachebook", Threads: 2, MemoryLimit: "256MB", Runs: []float64{900, 1000, 1100},
			MedianMS: 1000, PeakRSS: 200 << 20, Groups: 6488688, Spill: "128 partitions, 415.0 MiB in 256 files to /tmp/x",
			SpilledBytes: 415 << 20, VsDuckDB: 0.5},
		{Query: "Q17 spill", Engine: "duckdb", Threads: 2, MemoryLimit: "256MB", Runs: []float64{2000}, MedianMS: 2000,
			PeakRSS: 300 << 20, Groups: 6488688},
		{Query: "Q17 spill", Engine: "cachebook", Threads: 1, MemoryLimit: "256MB", Runs: []float64{3000}, MedianMS: 3000,
			Groups: 6488688},
		{Query: "Q17 spill", Engine: "duckdb", Threads: 1, MemoryLimit: "256MB", Error: "Out of Memory Error: failed"},
	}}
	var b strings.Builder
	if err := writeBenchTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "| variant |") {
		t.Errorf("a report without hot rows has their table:\n%s", out)
	}
	for _, want := range []string{
		"Q17 spill under SET memory_limit = '256MB' in both engines",
		"| Q17 spill | cachebook | 2 | 6488688 | 1000.0 | 200 | 415 MiB | 0.50× |",
		"| Q17 spill | duckdb | 2 | 6488688 | 2000.0 | 300 | not measured |  |",
		"| Q17 spill | cachebook | 1 | 6488688 | 3000.0 | 0 | did not spill |  |",
		"| Q17 spill | duckdb | 1 | | error: Out of Memory Error: failed | | | |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back benchReport
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Spill, rep.Spill) {
		t.Errorf("spill rows after a JSON round trip:\n%+v\nwant\n%+v", back.Spill, rep.Spill)
	}
	for _, key := range []string{`"spill":[`, `"spilled_bytes":435159040`, `"memory_limit":"256MB"`, `"peak_rss_bytes":314572800`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("JSON lacks %s: %s", key, js)
		}
	}
	rep.Spill = nil
	b.Reset()
	if err := writeBenchTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Spill:") {
		t.Errorf("a report without spill rows has a spill table:\n%s", b.String())
	}
}

// TestColdQueriesUnknown checks that --cold-queries refuses a name no
// cold query has, before it starts any process.
func TestColdQueriesUnknown(t *testing.T) {
	for _, tc := range []struct {
		only []string
		ok   bool
	}{
		{[]string{"Q33 cold", "first look"}, true},
		{[]string{"q33 COLD"}, true},
		{[]string{"first look, CounterID = 62"}, true},
		{[]string{"Q34 cold"}, false},
		{[]string{"first look", "first glance"}, false},
	} {
		// An empty thread list runs nothing: only the names are checked.
		_, err := runCold(context.Background(), "hits.parquet", nil, 1, tc.only, "", io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want ok %v", tc.only, err, tc.ok)
		}
	}
}
