package trace

import (
	"context"
	"flag"
	"sync"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/vec"
)

var benchRows = flag.Int("bench-rows", 1<<21, "rows for BenchmarkTrace (ClickBench-like keys, 5.67 rows per user, shuffled)")

var (
	benchOnce sync.Once
	benchKeys []int64
)

// BenchmarkTraceCount models SELECT UserID, count(*) GROUP BY UserID on
// article-shaped keys (userKeys) on the EPYC 9124 geometry, one thread,
// naive and radix with 4096 partitions: with 1/16 set sampling alone (the
// sampling before time sampling), with the kernel's default (1/16 of the
// sets and rows=auto), with 1 window in 64, and without sampling. It
// reports modelled rows per second.
func BenchmarkTraceCount(b *testing.B) {
	benchOnce.Do(func() { benchKeys = userKeys(*benchRows, 7) })
	keys := benchKeys
	g := cachesim.EPYC9124()
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"naive", Options{Strategy: agg.Naive}},
		{"radix4096", Options{Strategy: agg.Radix, Threads: 1, RadixBits: 12}},
	} {
		for _, s := range []struct {
			name string
			samp cachesim.Sampling
		}{
			{"sets1of16", AutoSampling(g, 1.0/16)},
			{"default", withEvery(AutoSampling(g, 1.0/16), TimeAuto)},
			{"sets1of16+time1of64", withEvery(AutoSampling(g, 1.0/16), 64)},
			{"full", cachesim.Sampling{}},
		} {
			b.Run(c.name+"/"+s.name, func(b *testing.B) {
				o := c.o
				o.Geometry, o.Sampling = g, s.samp
				cpu := cpuSeconds()
				for b.Loop() {
					if _, err := Count(context.Background(), keys, o); err != nil {
						b.Fatal(err)
					}
				}
				reportSpeed(b, len(keys), cpuSeconds()-cpu)
			})
		}
	}
}

func withEvery(s cachesim.Sampling, every int) cachesim.Sampling {
	s.Every = every
	return s
}

// nopTracer drops every access: the cost of the traced pass alone.
type nopTracer struct{ n int }

func (t *nopTracer) Alloc(int, int64, bool, bool) int   { t.n++; return t.n - 1 }
func (t *nopTracer) Access(int, int, int64, int, bool)  {}
func (t *nopTracer) Range(int, int, int64, int64, bool) {}
func (t *nopTracer) Phase(int, string)                  {}
func (t *nopTracer) Accesses(_ int, b []agg.TraceAccess) []agg.TraceAccess {
	if b == nil {
		return make([]agg.TraceAccess, 0, simBatchLen)
	}
	return b[:0]
}

// BenchmarkTraceReplica runs the traced pass with a tracer that drops
// every access: the floor under any sampling of the model.
func BenchmarkTraceReplica(b *testing.B) {
	benchOnce.Do(func() { benchKeys = userKeys(*benchRows, 7) })
	keys := benchKeys
	for _, c := range []struct {
		name string
		cfg  agg.TraceConfig
	}{
		{"naive", agg.TraceConfig{Strategy: agg.Naive}},
		{"radix4096", agg.TraceConfig{Strategy: agg.Radix, Threads: 1, RadixBits: 12}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := c.cfg
			cfg.RowsHint = int64(len(keys))
			var ms []agg.TraceMorsel
			for i := 0; i < len(keys); i += 1 << 16 {
				ms = append(ms, agg.TraceMorsel{Keys: keys[i:min(i+1<<16, len(keys))], Off: int64(i) * 8})
			}
			cpu := cpuSeconds()
			for b.Loop() {
				if _, err := agg.TraceCount(context.Background(), cfg, ms, &nopTracer{}); err != nil {
					b.Fatal(err)
				}
			}
			reportSpeed(b, len(keys), cpuSeconds()-cpu)
		})
	}
}

// reportSpeed reports rows per second of wall time and, where measured,
// of CPU time (the process's, GC included: steadier than wall time on a
// shared machine).
func reportSpeed(b *testing.B, rows int, cpu float64) {
	n := float64(rows) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "rows/s")
	if cpu > 0 {
		b.ReportMetric(n/cpu, "rows/cpu-s")
	}
}

// BenchmarkTraceReal runs the real query that BenchmarkTraceReplica and
// BenchmarkTraceCount trace (agg.Aggregate, tuned count path, huge pages
// on as the engine's default, one thread), morsels of 1<<16 keys: the
// cost the traced pass is measured against.
func BenchmarkTraceReal(b *testing.B) {
	benchOnce.Do(func() { benchKeys = userKeys(*benchRows, 7) })
	keys := benchKeys
	for _, c := range []struct {
		name string
		cfg  agg.Config
	}{
		{"naive", agg.Config{Strategy: agg.Naive}},
		{"radix4096", agg.Config{Strategy: agg.Radix, Threads: 1, RadixBits: 12}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := c.cfg
			cfg.RowsHint, cfg.HugePages = int64(len(keys)), true
			cpu := cpuSeconds()
			for b.Loop() {
				var mu sync.Mutex
				next := 0
				src := func(int) (agg.Input, bool, error) {
					mu.Lock()
					defer mu.Unlock()
					if next >= len(keys) {
						return agg.Input{}, false, nil
					}
					hi := min(next+1<<16, len(keys))
					v := vec.NewVector(vec.Int64, 0)
					v.I64, v.Len = keys[next:hi], hi-next
					next = hi
					return agg.Input{Keys: []*vec.Vector{v}, Args: []*vec.Vector{nil}, N: v.Len}, true, nil
				}
				if _, err := agg.Aggregate(context.Background(), []vec.Type{vec.Int64}, []agg.Spec{{Kind: agg.CountStar}}, cfg, src); err != nil {
					b.Fatal(err)
				}
			}
			reportSpeed(b, len(keys), cpuSeconds()-cpu)
		})
	}
}
