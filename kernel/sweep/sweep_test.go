package sweep

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"cachebook/engine/cachesim"
	"cachebook/kernel/internal/memtest"
	"cachebook/kernel/param"
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

// TestRunEngine runs a tiny sweep on the real engine, keeping its tables
// in DataDir.
func TestRunEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	var calls int
	rep, err := Run(ctx, Config{Rows: 20000, Groups: []int64{10, 1000}, Reps: 1, DataDir: dir, Counters: true,
		Progress: func(Point, int, int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []int{10, 1000} {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("groups-%d", g), "t.parquet")); err != nil {
			t.Errorf("table of %d groups not kept: %v", g, err)
		}
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

// TestMemoryBound checks Memory against the measured peak of a real sweep,
// and that parameters over the limit are refused before anything is
// allocated.
func TestMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 1M-row table")
	}
	v, err := param.Parse(Params(), map[string]string{"rows": "1e6", "groups": "1e3,1e6", "reps": "1", "strategies": "naive,radix"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFrom(v, 0)
	if err != nil {
		t.Fatal(err)
	}
	heap, rss := memtest.Peak(func() {
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Error(err)
		}
	})
	est := Memory(cfg.Rows, cfg.Groups, false)
	t.Logf("rows %d groups %v: peak heap %d MiB, rss %d MiB, estimate %d MiB", cfg.Rows, cfg.Groups, heap>>20, rss>>20, est>>20)
	if heap > est {
		t.Errorf("peak heap %d is above the estimate %d", heap, est)
	}

	for _, raw := range []map[string]string{
		{"rows": "2147483648"},
		{"rows": "1e8", "groups": "1e3"},
	} {
		v, err := param.Parse(Params(), raw)
		if err != nil {
			t.Fatal(err)
		}
		var me *param.MemoryError
		heap, _ := memtest.Peak(func() { _, err = ConfigFrom(v, 256<<20) })
		if !errors.As(err, &me) {
			t.Errorf("%v: %v, want a memory error", raw, err)
		}
		if heap > 1<<20 {
			t.Errorf("%v: refusing took %d bytes", raw, heap)
		}
	}
	// A default row count shrinks to the limit.
	v, _ = param.Parse(Params(), nil)
	cfg, err = ConfigFrom(v, 256<<20)
	if err != nil || Memory(cfg.Rows, cfg.Groups, false) > 256<<20 || cfg.Rows < 1e6 {
		t.Errorf("default under 256 MiB: rows %d groups %v, %v", cfg.Rows, cfg.Groups, err)
	}
}

// TestSweepModel: with model=true every point carries modelled misses per
// row, and naive's grow with the groups as its table leaves each level of
// a small modelled machine (32 KiB L1, 256 KiB L2, 1 MiB L3).
func TestSweepModel(t *testing.T) {
	v, err := param.Parse(Params(), map[string]string{"rows": "262144", "groups": "100,1000,10000,100000", "reps": "1", "model": "true"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFrom(v, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Model {
		t.Fatal("model=true did not set Config.Model")
	}
	cfg.ModelGeometry, err = cachesim.Parse(cachesim.DefaultGeometry(), "l2=256K l3=1M")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelSource = "test"
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ModelGeometry == "" || rep.ModelSampling == "" {
		t.Errorf("report lacks the modelled geometry or sampling: %q %q", rep.ModelGeometry, rep.ModelSampling)
	}
	var naive []*Model
	for _, p := range rep.Points {
		m := p.Model
		if m == nil || !m.Modelled || m.Why != "" {
			t.Fatalf("%d groups %s: model %+v", p.Groups, p.Strategy, m)
		}
		t.Logf("%7d groups %-5s: %s (±%.1f%%, %.0f ms)", p.Groups, p.Strategy, m.Columns(), 100*m.RelErr, float64(m.ModelNs)/1e6)
		// Every row's key is read from a column that does not fit: at
		// least 1/8 of a line per row (less the sampling's error).
		if m.DRAMPerRow < 0.1 {
			t.Errorf("%d groups %s: %.3f DRAM lines/row, below the key column's 0.125", p.Groups, p.Strategy, m.DRAMPerRow)
		}
		switch p.Strategy {
		case "naive":
			naive = append(naive, m)
			if m.Partitions != 1 {
				t.Errorf("naive with %d partitions", m.Partitions)
			}
		case "radix":
			if m.Partitions < 2 {
				t.Errorf("%d groups radix: %d partitions", p.Groups, m.Partitions)
			}
		}
	}
	if len(naive) != 4 {
		t.Fatalf("%d naive points", len(naive))
	}
	for i := 1; i < len(naive); i++ {
		if naive[i].L1PerRow < naive[i-1].L1PerRow*0.95 || naive[i].DRAMPerRow < naive[i-1].DRAMPerRow*0.95 {
			t.Errorf("naive modelled misses fell from %d to %d groups: %+v then %+v", rep.Points[2*(i-1)].Groups, rep.Points[2*i].Groups, naive[i-1], naive[i])
		}
	}
	// 10⁵ groups: a 2 MiB+ table in a 1 MiB L3 misses on most rows; 10²
	// groups: only the key column.
	if first, last := naive[0], naive[3]; last.DRAMPerRow < 3*first.DRAMPerRow || last.L2PerRow < 3*first.L2PerRow {
		t.Errorf("naive DRAM/row %.3f → %.3f, L2/row %.3f → %.3f: want the 10⁵-group table to miss far more", first.DRAMPerRow, last.DRAMPerRow, first.L2PerRow, last.L2PerRow)
	}
}

// TestKeysShuffle: Keys shuffles with the same draws as rand.Shuffle (it
// writes the shuffle out to look at its context), so tables and reference
// outputs stay the same.
func TestKeysShuffle(t *testing.T) {
	for _, tc := range []struct{ rows, groups int64 }{{1000, 10}, {200_000, 5000}} {
		const seed = 42
		rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
		want := make([]int64, tc.rows)
		for i := range want {
			j := int64(i)
			if j >= tc.groups {
				j = rng.Int64N(tc.groups)
			}
			want[i] = int64(splitmix64(uint64(j) ^ seed))
		}
		rng.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
		if got := Keys(tc.rows, tc.groups, seed); !slices.Equal(got, want) {
			t.Errorf("Keys(%d, %d) differs from the rand.Shuffle order", tc.rows, tc.groups)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := keysContext(ctx, 1000, 10, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
