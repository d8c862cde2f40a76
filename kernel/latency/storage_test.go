//go:build !js

package latency

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestMeasureStorage(t *testing.T) {
	dir := t.TempDir()
	st, err := MeasureStorage(context.Background(), StorageConfig{Dir: dir, Bytes: 8 << 20, MaxReads: 200})
	if err != nil {
		t.Fatal(err)
	}
	if st.Reads < 64 || st.ReadNs <= 0 || st.MinNs > st.ReadNs || st.MaxNs < st.ReadNs || st.SeqGBps <= 0 {
		t.Errorf("implausible storage figures: %+v", st)
	}
	// A read that really reaches a device takes microseconds, far above
	// any DRAM access; one the page cache answered need not.
	if st.Bypassed && st.ReadNs < 10*MemoryNs {
		t.Errorf("bypassed 4 KiB read took %.0f ns, no slower than DRAM", st.ReadNs)
	}
	if st.Method == "" {
		t.Error("no method")
	}
	assertEmpty(t, dir)
}

func TestMeasureStorageRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		bytes int64
		want  string
	}{
		{"too small", 1 << 10, "too small"},
		{"more than the disk has", 1 << 55, "would leave less than 1 GiB free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MeasureStorage(context.Background(), StorageConfig{Dir: dir, Bytes: tt.bytes})
			if _, ok := freeBytes(dir); !ok && tt.bytes > 1<<40 {
				t.Skip("free space unknown here")
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			assertEmpty(t, dir)
		})
	}
}

func TestMeasureStorageCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MeasureStorage(ctx, StorageConfig{Dir: dir, Bytes: 8 << 20}); err == nil {
		t.Fatal("cancelled measurement succeeded")
	}
	assertEmpty(t, dir)
}

func TestRunWithDisk(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), Config{MinBytes: 64 << 10, MaxBytes: 256 << 10, PointsPerOctave: 1,
		Reps: 1, SampleTime: 1e6, DiskBytes: 4 << 20, DiskDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Storage == nil {
		t.Fatalf("no storage level: %s", res.StorageNote)
	}
	last, lvl := res.Points[len(res.Points)-1], res.Levels[len(res.Levels)-1]
	if last.Bytes != 4<<20 || lvl.Name != "disk" || lvl.Ns != res.Storage.ReadNs {
		t.Errorf("last point %+v, last level %+v", last, lvl)
	}
	var b strings.Builder
	res.WriteSummary(&b)
	if !strings.Contains(b.String(), "disk: random 4 KiB read") {
		t.Errorf("summary lacks the disk:\n%s", b.String())
	}
	assertEmpty(t, dir)
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}
