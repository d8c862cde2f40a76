package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cachebook/engine/cachesim"
	"cachebook/kernel/internal/timing"
)

func TestTransposeParams(t *testing.T) {
	tests := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"n": "8"}, "n must be between 16 and 4096, got 8"},
		{map[string]string{"n": "8192"}, "n must be between 16 and 4096, got 8192"},
		{map[string]string{"block": "0"}, "block must be between 1 and 4096, got 0"},
		{map[string]string{"n": "64", "block": "65"}, "block must be at most n (64), got 65"},
		{map[string]string{"reps": "0"}, "reps must be between 1 and 50"},
		{map[string]string{"model": "maybe"}, `model must be sampled, full or off, got "maybe"`},
		{map[string]string{"geometry": "l1=banana"}, "geometry: "},
		{map[string]string{"geometry": "l1=48K l1ways=7"}, "geometry: "},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			res, err := runSpec(t, "transpose", tt.params, nil)
			if err == nil {
				t.Fatalf("no error, result %+v", res)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestTransposeMemory(t *testing.T) {
	s, err := Lookup("transpose")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check(map[string]string{"n": "4096"}, Options{MemoryLimit: 64 << 20})
	if err == nil || !strings.Contains(err.Error(), "transpose") {
		t.Errorf("4096×4096 (256 MiB) under a 64 MiB limit: %v, want a memory error", err)
	}
	if err := s.Check(map[string]string{"n": "1024"}, Options{MemoryLimit: 64 << 20}); err != nil {
		t.Errorf("1024×1024 (16 MiB) under a 64 MiB limit: %v", err)
	}
}

// TestTransposeTiles checks that every tile size, dividing n or not,
// gives the transpose, and that a set stop flag stops it.
func TestTransposeTiles(t *testing.T) {
	for _, n := range []int{16, 17, 100} {
		for _, b := range []int{1, 3, 8, 16, n} {
			t.Run(fmt.Sprintf("n=%d/b=%d", n, b), func(t *testing.T) {
				src, dst := make([]uint64, n*n), make([]uint64, n*n)
				for i := range src {
					src[i] = uint64(i)*2654435761 + 1
				}
				var stop atomic.Bool
				if !transposeTiles(dst, src, n, b, &stop) {
					t.Fatal("stopped without a stop")
				}
				if !checkTranspose(dst, src, n) {
					t.Fatal("not the transpose")
				}
			})
		}
	}
	const n = 256 // 4 × stopEvery elements
	src, dst := make([]uint64, n*n), make([]uint64, n*n)
	var stop atomic.Bool
	stop.Store(true)
	if transposeTiles(dst, src, n, 8, &stop) {
		t.Error("a set stop flag did not stop the transpose")
	}
}

// TestTransposeModel checks the model's verdicts on a 512×512 matrix
// (4 KiB rows: a column's lines share a few L1 sets), every set
// simulated: naive misses the L1 on every store, 8×8 tiles on about one
// access in eight, tiles of 1 are the naive order, and tiles of 16 put 16
// lines of dst in one 8-way set.
func TestTransposeModel(t *testing.T) {
	const n = 512
	geo := cachesim.DefaultGeometry()
	model := func(b int, samp cachesim.Sampling) TransposeModel {
		t.Helper()
		m, _, err := modelTranspose(context.Background(), geo, samp, n, b)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	naive, one, eight, sixteen := model(n, cachesim.Sampling{}), model(1, cachesim.Sampling{}), model(8, cachesim.Sampling{}), model(16, cachesim.Sampling{})
	tests := []struct {
		name string
		ok   bool
	}{
		{"naive misses on every store and every 8th load", naive.L1MissesPerElement > 1.1 && naive.L1MissesPerElement < 1.15},
		{"tiles of 1 are the naive order", one == naive},
		{"8×8 tiles miss on about 2 accesses in 16", eight.L1MissesPerElement > 0.24 && eight.L1MissesPerElement < 0.3},
		{"8×8 tiles miss at least 3 times less than naive", naive.L1MissesPerElement > 3*eight.L1MissesPerElement},
		{"16×16 tiles overflow a set", sixteen.L1MissesPerElement > 2*eight.L1MissesPerElement},
		{"the same lines come from memory", eight.DRAMLinesPerElement > 0.9*naive.DRAMLinesPerElement-0.01},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: naive %+v, 1×1 %+v, 8×8 %+v, 16×16 %+v", tt.name, naive, one, eight, sixteen)
		}
	}
	// Set sampling stays within 5 stated standard errors (and 2%) of the
	// full model.
	m, rel, err := modelTranspose(context.Background(), geo, cachesim.Sampling{Mod: 64, Keep: 4}, n, 8)
	if err != nil {
		t.Fatal(err)
	}
	if diff := m.L1MissesPerElement/eight.L1MissesPerElement - 1; diff > 5*rel+0.02 || diff < -5*rel-0.02 {
		t.Errorf("sampled L1 misses %.4f, full %.4f: %+.1f%%, stated ±%.1f%%", m.L1MissesPerElement, eight.L1MissesPerElement, 100*diff, 100*rel)
	}
}

func TestTransposeRun(t *testing.T) {
	r, err := runSpec(t, "transpose", map[string]string{"n": "256", "block": "8", "reps": "2", "sample": "1ms"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Data.(*TransposeData)
	switch {
	case d.N != 256 || d.Block != 8 || d.Bytes != 256*256*8 || d.Passes < 1:
		t.Errorf("data %+v", d)
	case len(d.NaiveNS) != 2 || len(d.BlockedNS) != 2 || d.Speedup <= 0 || d.Low > d.Speedup || d.High < d.Speedup:
		t.Errorf("timings %+v", d)
	case len(d.Variants) != 2 || d.Variants[0].Variant != "naive" || d.Variants[1].Block != 8:
		t.Errorf("variants %+v", d.Variants)
	case d.ModelledL1Ratio < 3:
		t.Errorf("modelled L1 ratio %.2f, want at least 3 (naive 1.125 per element, 8×8 about 0.26)", d.ModelledL1Ratio)
	case len(r.Tables) != 2 || r.Tables[1].Rows[1][0] != "blocked 8×8":
		t.Errorf("tables %+v", r.Tables)
	}
	off, err := runSpec(t, "transpose", map[string]string{"n": "64", "reps": "1", "sample": "1ms", "model": "off"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := off.Data.(*TransposeData); len(d.Variants) != 0 || len(off.Tables) != 1 {
		t.Errorf("model=off modelled %+v", d.Variants)
	}
}

func TestTransposeCancel(t *testing.T) {
	s, err := Lookup("transpose")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = Run(ctx, s, map[string]string{"n": "2048", "reps": "50", "sample": "2s"}, Options{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the deadline", err)
	}
}

// TestTransposeDirection checks that 8×8 tiles beat the naive order on a
// 2048×2048 matrix (32 MiB, 16 KiB rows), which measured 2.7× on a
// 2-vCPU VM; the assertion wants 1.3×.
func TestTransposeDirection(t *testing.T) {
	timing.Skip(t)
	timing.Eventually(t, func() string {
		r, err := runSpec(t, "transpose", map[string]string{"n": "2048", "block": "8", "reps": "3", "model": "off"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := r.Data.(*TransposeData)
		if d.Speedup < 1.3 {
			return fmt.Sprintf("naive %v ns/element, blocked %v: %.2fx, want at least 1.3x", d.NaiveNS, d.BlockedNS, d.Speedup)
		}
		return ""
	})
}
