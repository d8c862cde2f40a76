package bandwidth

import (
	"context"
	"errors"
	"testing"
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

func TestParseOps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Op
		bad  bool
	}{
		{"read", []Op{Read}, false},
		{"read, copy,memset", []Op{Read, Copy, Memset}, false},
		{"read,fly", nil, true},
		{"", nil, true},
	} {
		got, err := ParseOps(tc.in)
		if (err != nil) != tc.bad || len(got) != len(tc.want) {
			t.Errorf("ParseOps(%q) = %v, %v", tc.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseOps(%q)[%d] = %s, want %s", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}
