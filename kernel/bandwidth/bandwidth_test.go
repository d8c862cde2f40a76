package bandwidth

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
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

// TestChunks: the chunks cover a buffer exactly, in order; a memset's are
// never under 32 MiB (where clear() would leave its non-temporal stores),
// unless the whole buffer is.
func TestChunks(t *testing.T) {
	const mib = 1 << 20 / 8 // words
	for _, tc := range []struct {
		op       Op
		words    int
		min, max int // chunk sizes in words, the last one aside
	}{
		{Read, 10*mib + 3, 4 * mib, 4 * mib},
		{Copy, 100, 100, 100},
		{Memset, 16 * mib, 16 * mib, 16 * mib},
		{Memset, 40 * mib, 40 * mib, 40 * mib},
		{Memset, 256 * mib, 32 * mib, 32 * mib},
		{Memset, 100*mib + 5, 32 * mib, 64 * mib},
	} {
		next := 0
		var sizes []int
		for c := range chunks(tc.op, tc.words) {
			if c.lo != next || c.hi <= c.lo {
				t.Fatalf("%s of %d words: chunk %v after %d", tc.op, tc.words, c, next)
			}
			next = c.hi
			sizes = append(sizes, c.hi-c.lo)
		}
		if next != tc.words {
			t.Errorf("%s of %d words: chunks end at %d", tc.op, tc.words, next)
		}
		for i, s := range sizes {
			last := i == len(sizes)-1
			if s > tc.max || (s < tc.min && !(last && tc.op != Memset)) {
				t.Errorf("%s of %d words: chunk %d of %d words, want %d..%d", tc.op, tc.words, i, s, tc.min, tc.max)
			}
		}
	}
}

// TestRunStopsMidPass: once stop is set, a pass gives up at its next
// chunk instead of reading the whole buffer.
func TestRunStopsMidPass(t *testing.T) {
	var stop atomic.Bool
	src := [][]uint64{make([]uint64, 64<<20/8)}
	full := runOnce(Read, 1, src, nil, &stop)
	stop.Store(true)
	cut := runOnce(Read, 1, src, nil, &stop)
	if cut.wall*4 > full.wall {
		t.Errorf("a stopped pass took %v, a whole one %v", cut.wall, full.wall)
	}
}
