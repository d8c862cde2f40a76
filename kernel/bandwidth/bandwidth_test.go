package bandwidth

import (
	"context"
	"errors"
	"slices"
	"testing"

	"cachebook/kernel/param"
)

func TestSumFill(t *testing.T) {
	b := make([]uint64, 1003)
	fill(b, 3)
	if s := sum(b); s != 3009 {
		t.Errorf("sum = %d", s)
	}
}

func TestSummarize(t *testing.T) {
	r := summarize(Read, 2, 1e9, []float64{1, 2, 0.5})
	// 2e9 bytes in 1 s (median) = 2 GB/s; fastest 4, slowest 1.
	if r.GBps != 2 || r.MaxGBps != 4 || r.MinGBps != 1 || r.PerThreadGBps != 1 || r.MedianNs != 1e9 {
		t.Errorf("summarize = %+v", r)
	}
}

func TestParseOp(t *testing.T) {
	for _, o := range AllOps {
		if got, err := ParseOp(string(o)); err != nil || got != o {
			t.Errorf("ParseOp(%s) = %v, %v", o, got, err)
		}
	}
	if _, err := ParseOp("triad"); err == nil {
		t.Error("unknown op accepted")
	}
}

func TestRunSmall(t *testing.T) {
	calls := 0
	rep, err := Run(context.Background(), Config{Bytes: 1 << 20, Threads: []int{1, 2}, Reps: 3,
		Progress: func(r Result, done, total int) {
			calls++
			if total != 8 || done != calls {
				t.Errorf("progress %d/%d", done, total)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 8 || calls != 8 {
		t.Fatalf("%d results", len(rep.Results))
	}
	for _, r := range rep.Results {
		if !(r.GBps > 0.01 && r.GBps < 10000) || r.MinGBps > r.GBps || r.MaxGBps < r.GBps {
			t.Errorf("implausible %+v", r)
		}
	}
	if _, err := Run(context.Background(), Config{Bytes: 100}); err == nil {
		t.Error("tiny buffer accepted")
	}
	if _, err := Run(context.Background(), Config{Bytes: 1 << 20, Threads: []int{0}}); err == nil {
		t.Error("0 threads accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Bytes: 1 << 20, Threads: []int{1}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

func TestConfigFrom(t *testing.T) {
	for _, tc := range []struct {
		raw     map[string]string
		limit   int64
		threads int
		bytes   int64
		ops     []Op
		err     string // "": ok; "param", "memory", "threads"
	}{
		{raw: map[string]string{"ops": "read, copy,memset", "threads": "1"}, bytes: 256 << 20, ops: []Op{Read, Copy, Memset}},
		{raw: map[string]string{"ops": "read,fly"}, err: "param"},
		{raw: map[string]string{"ops": ""}, err: "param"},
		{raw: map[string]string{"bytes": "1T"}, limit: 1 << 30, err: "memory"},
		{raw: map[string]string{"bytes": "2G", "threads": "2", "ops": "write"}, limit: 3 << 30, err: "memory"},
		{raw: map[string]string{"bytes": "1G", "threads": "1", "ops": "write"}, limit: 3 << 30, bytes: 1 << 30, ops: []Op{Write}},
		// A default size shrinks to fit: copy needs two buffers.
		{raw: map[string]string{"threads": "1", "ops": "copy"}, limit: 100 << 20, bytes: 32 << 20, ops: []Op{Copy}},
		{raw: map[string]string{"threads": "1,2"}, threads: 1, err: "threads"},
	} {
		v, err := param.Parse(Params(), tc.raw)
		var cfg Config
		if err == nil {
			cfg, err = ConfigFrom(v, tc.limit, tc.threads)
		}
		var pe *param.Error
		var me *param.MemoryError
		var te *param.ThreadsError
		got := ""
		switch {
		case errors.As(err, &pe):
			got = "param"
		case errors.As(err, &me):
			got = "memory"
		case errors.As(err, &te):
			got = "threads"
		case err != nil:
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("%v: error %v, want %q", tc.raw, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if cfg.Bytes != tc.bytes || !slices.Equal(cfg.Ops, tc.ops) {
			t.Errorf("%v: bytes %d ops %v, want %d %v", tc.raw, cfg.Bytes, cfg.Ops, tc.bytes, tc.ops)
		}
		if tc.limit > 0 && Memory(cfg) > tc.limit {
			t.Errorf("%v: memory %d over the limit %d", tc.raw, Memory(cfg), tc.limit)
		}
	}
}
