package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
