package engine

import (
	"errors"
	"strings"
	"testing"

	"cachebook/engine/spill"
)

func TestSpaceLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name          string
		memLimit, max int64
		p             spillPlace
		want          int64
		fails         bool
	}{
		{"files: max_temp_directory_size", 32 * mib, 16 << 30, spillPlace{cellMemory: 512 * mib}, 16 << 30, false},
		{"memory: what the cell leaves", 32 * mib, 16 << 30, spillPlace{memory: true, cellMemory: 512 * mib}, 480 * mib, false},
		{"memory: max_temp_directory_size smaller", 32 * mib, 100 * mib, spillPlace{memory: true, cellMemory: 512 * mib}, 100 * mib, false},
		{"memory: no room", 512 * mib, 16 << 30, spillPlace{memory: true, cellMemory: 512 * mib}, 0, true},
		{"memory: no cap", 32 * mib, 16 << 30, spillPlace{memory: true}, 16 << 30, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := spaceLimit(Settings{MemoryLimit: tt.memLimit, MaxTempDirectorySize: tt.max}, tt.p)
			if tt.fails {
				if !errors.Is(err, spill.ErrSpaceLimit) || !strings.Contains(err.Error(), "memory_limit") {
					t.Errorf("err = %v, want the space limit naming memory_limit", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("spaceLimit = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// TestGroupBySpillsToMemory: with the spill in memory (the browser's
// way, Options.SpillToMemory here) a GROUP BY over its memory_limit makes
// the same partition passes, says in EXPLAIN ANALYZE where its partitions
// went, gives the unlimited answer and writes no file. (TestSpaceLimit
// checks the error where memory_limit leaves the cell no room.)
func TestGroupBySpillsToMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 300,000-row table")
	}
	db, err := Open(Options{DataDir: memHitsDir(t), CacheBytes: 1 << 20, QueryMemory: 96 << 20, SpillToMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	const q = "SELECT UserID, SearchPhrase, min(EventTime), max(URL) FROM hits GROUP BY UserID, SearchPhrase"
	want, _, err := spillRows(t, spillSession(t, db, "radix", "1", "", t.TempDir()), q)
	if err != nil {
		t.Fatal(err)
	}
	// Two threads: the workers spill at once, into one memory space
	// (TestGroupBySpills covers one thread and both counts on files).
	for _, threads := range []string{"2"} {
		dir := t.TempDir()
		got, r, err := spillRows(t, spillSession(t, db, "parallel", threads, spillLimit, dir), q)
		if err != nil {
			t.Fatalf("threads %s: %v", threads, err)
		}
		if !planHas(r.Plan, "spilled: ") || !planHas(r.Plan, "to "+spill.MemoryWhere) {
			t.Errorf("threads %s: the plan does not say it spilled to memory", threads)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("threads %s: %d groups differ from the %d unlimited", threads, len(got), len(want))
		}
		if f := leftFiles(t, dir); len(f) > 0 {
			t.Errorf("threads %s: files written: %v", threads, f)
		}
	}
}
