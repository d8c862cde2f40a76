package main

import (
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
