package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

func TestKeys(t *testing.T) {
	for _, tt := range []struct{ rows, groups int64 }{{1000, 1}, {1000, 10}, {1000, 999}, {1000, 1000}, {50000, 1234}} {
		keys := Keys(tt.rows, tt.groups, 7)
		if int64(len(keys)) != tt.rows {
			t.Fatalf("%d keys", len(keys))
		}
		distinct := map[int64]int{}
		for _, k := range keys {
			distinct[k]++
		}
		if int64(len(distinct)) != tt.groups {
			t.Errorf("rows %d groups %d: %d distinct", tt.rows, tt.groups, len(distinct))
		}
		// Roughly uniform: no group holds more than 5× its share (+ slack).
		share := float64(tt.rows) / float64(tt.groups)
		for _, n := range distinct {
			if float64(n) > 5*share+10 {
				t.Errorf("a group has %d rows, share %.1f", n, share)
				break
			}
		}
	}
	a, b := Keys(100, 10, 1), Keys(100, 10, 1)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("not deterministic")
		}
	}
}

func TestWriteKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.parquet")
	keys := Keys(70000, 100, 3)
	if err := WriteKeys(path, keys); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[keyRow](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(keys) || rows[0].K != keys[0] || rows[len(rows)-1].K != keys[len(keys)-1] {
		t.Errorf("read back %d rows", len(rows))
	}
	if err := WriteKeys(filepath.Join(t.TempDir(), "no", "such", "dir.parquet"), keys); err == nil {
		t.Error("write into a missing dir succeeded")
	}
}

func TestSummarizeAndValidate(t *testing.T) {
	p := summarize(10, "naive", 1000, []run{{elapsed: 3000}, {elapsed: 1000}, {elapsed: 2000}})
	if p.NsPerRow != 2 || p.MinNsPerRow != 1 || p.MedianNs != 2000 {
		t.Errorf("summarize = %+v", p)
	}
	if err := (Config{Rows: 100, Groups: []int64{1000}}).Validate(); err == nil {
		t.Error("more groups than rows accepted")
	}
	if err := (Config{Rows: 100, Groups: []int64{0}}).Validate(); err == nil {
		t.Error("0 groups accepted")
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

// TestRunEngine runs a tiny sweep on the real engine; it skips while the
// engine's Exec is not implemented yet.
func TestRunEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	var calls int
	rep, err := Run(ctx, Config{Rows: 20000, Groups: []int64{10, 1000}, Reps: 1, DataDir: dir, Counters: true,
		Progress: func(Point, int, int) { calls++ }})
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		t.Skipf("engine not ready: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 4 || calls != 4 {
		t.Fatalf("%d points", len(rep.Points))
	}
	for _, p := range rep.Points {
		if p.NsPerRow <= 0 || p.Counters == nil {
			t.Errorf("point %+v", p)
		}
		if tc, ok := p.Counters.Total.Event("task-clock"); p.Counters.Availability.Software.Available && (!ok || tc.Value <= 0) {
			t.Errorf("no task-clock for %+v", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "groups-10", "t.parquet")); err != nil {
		t.Errorf("data file: %v", err)
	}
}
