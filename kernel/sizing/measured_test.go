package sizing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMeasuredStore(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	if _, ok := LoadMeasured(dir, now); ok {
		t.Fatal("an empty directory has a measurement")
	}
	if err := SaveMeasured(dir, 6<<20, now); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		at   time.Time
		want int64
	}{
		{"fresh", now.Add(time.Hour), 6 << 20},
		{"old", now.Add(MeasuredMaxAge + time.Hour), 0},
		{"from the future", now.Add(-time.Hour), 0},
	}
	for _, tt := range tests {
		got, ok := LoadMeasured(dir, tt.at)
		if got != tt.want || ok != (tt.want > 0) {
			t.Errorf("%s: LoadMeasured = %d, %v; want %d", tt.name, got, ok, tt.want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "last-level.json"))
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(b), machineID(), "elsewhere/64/linux-arm64", 1)
	if err := os.WriteFile(filepath.Join(dir, "last-level.json"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := LoadMeasured(dir, now); ok {
		t.Error("another machine's measurement was used")
	}
	if err := SaveMeasured(dir, 0, now); err == nil {
		t.Error("saved an empty measurement")
	}
}

func TestForMeasuredNamesBoth(t *testing.T) {
	p := ForMeasured(4<<20, ServerBudget(0))
	if p.L3Bytes != 4<<20 || p.L3Source != "measured" {
		t.Fatalf("plan %+v, want the measured 4 MiB", p)
	}
	if p.TableBytes < TargetFactor*p.L3Bytes && !p.Capped {
		t.Errorf("table %d bytes, want at least %d× the measured level", p.TableBytes, TargetFactor)
	}
	s := p.String()
	for _, want := range []string{"measured here, 4 MiB", "short latency probe"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	if q := ForMeasured(0, ServerBudget(0)); q.L3Source == "measured" {
		t.Errorf("no measurement, yet the plan says measured: %+v", q)
	}
}
