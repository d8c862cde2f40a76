package trace

import (
	"context"
	"sync"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/cachesim/internal/testkeys"
	"cachebook/engine/vec"
)

// keysFor returns n keys with exactly groups distinct values, shuffled.
func keysFor(n, groups int, seed uint64) []int64 { return testkeys.Keys(n, groups, seed) }

func realGroups(t *testing.T, keys []int64, cfg agg.Config) int {
	t.Helper()
	var once sync.Once
	src := func(int) (agg.Input, bool, error) {
		first := false
		once.Do(func() { first = true })
		if !first {
			return agg.Input{}, false, nil
		}
		v := vec.NewVector(vec.Int64, 0)
		v.I64, v.Len = keys, len(keys)
		return agg.Input{Keys: []*vec.Vector{v}, Args: []*vec.Vector{nil}, N: len(keys)}, true, nil
	}
	cfg.RowsHint = int64(len(keys))
	out, err := agg.Aggregate(context.Background(), []vec.Type{vec.Int64}, []agg.Spec{{Kind: agg.CountStar}}, cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return out.Groups
}

// shift scales the tests down under the race detector, which slows the
// model's every access.
func shift() uint {
	if raceEnabled {
		return 2
	}
	return 0
}

func TestCountModel(t *testing.T) {
	keys := keysFor(1<<20>>shift(), 1<<18>>shift(), 1)
	g := cachesim.DefaultGeometry()
	g.L3.Size = 4 << 20 >> shift()
	var dram [2]float64
	for i, o := range []Options{
		{Geometry: g, Strategy: agg.Naive},
		{Geometry: g, Strategy: agg.Radix, Threads: 1, RadixBits: 10},
	} {
		res, err := Count(context.Background(), keys, o)
		if err != nil {
			t.Fatal(err)
		}
		want := realGroups(t, keys, agg.Config{Strategy: o.Strategy, Threads: o.Threads, RadixBits: o.RadixBits})
		if res.Groups != want {
			t.Errorf("%+v: modelled %d groups, real %d", o.Strategy, res.Groups, want)
		}
		dram[i] = float64(res.Total.DRAMReads) / float64(res.Rows)
		t.Logf("strategy %d: %.3f DRAM reads/row, %.3f L1 misses/row, phases %d", o.Strategy, dram[i], float64(res.Total.L1.Misses)/float64(res.Rows), len(res.Phases))
	}
	// 2^18 groups in a 2^19-slot table (8 MiB) do not fit a 4 MiB L3
	// (all four times smaller under -race):
	// naive misses on most rows; radix tables of 2^8 slots stay in L1,
	// and radix pays about 0.375 lines a row to read the keys and write
	// and read back its partitions.
	if dram[0] < 0.5 || dram[1] > dram[0]*3/4 {
		t.Errorf("DRAM reads/row naive %.3f, radix %.3f", dram[0], dram[1])
	}
}

func TestParallelPerWorker(t *testing.T) {
	keys := keysFor(1<<18, 1<<14, 2)
	res, err := Count(context.Background(), keys, Options{Geometry: cachesim.DefaultGeometry(), Strategy: agg.Radix, Threads: 4, RadixBits: 8})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	var loads int64
	for _, p := range res.Phases {
		seen[p.Worker]++
		loads += p.Stats.Loads
	}
	if len(seen) != 4 || seen[0] != 0 {
		t.Errorf("workers %v, want 1..4 with two phases each", seen)
	}
	if loads != res.Total.Loads || loads < int64(len(keys))*2 {
		t.Errorf("phase loads %d, total %d", loads, res.Total.Loads)
	}
	if want := int64(8 << 20); res.Geometry.L3.Size != want {
		t.Errorf("L3 share %d, want %d", res.Geometry.L3.Size, want)
	}
	if res.Groups != realGroups(t, keys, agg.Config{Strategy: agg.Radix, Threads: 4, RadixBits: 8}) {
		t.Errorf("groups %d", res.Groups)
	}
}

func TestSamplingAgrees(t *testing.T) {
	keys := keysFor(1<<20>>shift(), 1<<18>>shift(), 3)
	g := cachesim.DefaultGeometry()
	g.L3.Size = 4 << 20 >> shift()
	full, err := Count(context.Background(), keys, Options{Geometry: g, Strategy: agg.Naive})
	if err != nil {
		t.Fatal(err)
	}
	s := AutoSampling(g, 1.0/16)
	smp, err := Count(context.Background(), keys, Options{Geometry: g, Sampling: s, Strategy: agg.Naive})
	if err != nil {
		t.Fatal(err)
	}
	d := float64(smp.Total.DRAMReads-full.Total.DRAMReads) / float64(full.Total.DRAMReads)
	t.Logf("sampling %s: DRAM reads %d vs %d (%.2f%%, stated ±%.2f%%)", s, smp.Total.DRAMReads, full.Total.DRAMReads, 100*d, 100*smp.Total.RelErr.DRAMReads)
	if d < 0 {
		d = -d
	}
	if d > 4*smp.Total.RelErr.DRAMReads+0.01 {
		t.Errorf("sampled DRAM reads off by %.2f%%, stated ±%.2f%%", 100*d, 100*smp.Total.RelErr.DRAMReads)
	}
}

func TestScan(t *testing.T) {
	res, err := Scan(context.Background(), 1<<20, 2, Options{Geometry: cachesim.DefaultGeometry()})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 << 20 / 8); res.Total.DRAMReads != want {
		t.Errorf("scan DRAM reads %d, want %d (one per line)", res.Total.DRAMReads, want)
	}
}

func BenchmarkCountNaive(b *testing.B) {
	keys := keysFor(1<<20, 1<<18, 1)
	for _, s := range []float64{1, 1.0 / 16} {
		g := cachesim.DefaultGeometry()
		b.Run(AutoSampling(g, s).String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := Count(context.Background(), keys, Options{Geometry: g, Sampling: AutoSampling(g, s), Strategy: agg.Naive}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(keys))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func TestGenericModel(t *testing.T) {
	keys := keysFor(1<<19>>shift(), 1<<17>>shift(), 4)
	g := cachesim.DefaultGeometry()
	g.L3.Size = 2 << 20 >> shift()
	specs := []agg.Spec{{Kind: agg.CountStar}, {Kind: agg.Sum, In: vec.Int64}}
	gen, err := Generic(context.Background(), keys, specs, Options{Geometry: g})
	if err != nil {
		t.Fatal(err)
	}
	cnt, err := Count(context.Background(), keys, Options{Geometry: g, Strategy: agg.Naive})
	if err != nil {
		t.Fatal(err)
	}
	if gen.Groups != cnt.Groups {
		t.Errorf("generic %d groups, count path %d", gen.Groups, cnt.Groups)
	}
	// The generic path keeps states apart from the table and reads an
	// input column: more misses per row than the tuned path.
	if gen.Total.L1.Misses <= cnt.Total.L1.Misses || gen.Total.DRAMReads <= cnt.Total.DRAMReads {
		t.Errorf("generic L1 %d DRAM %d, tuned L1 %d DRAM %d", gen.Total.L1.Misses, gen.Total.DRAMReads, cnt.Total.L1.Misses, cnt.Total.DRAMReads)
	}
	t.Logf("generic %.3f, tuned %.3f DRAM reads/row", float64(gen.Total.DRAMReads)/float64(gen.Rows), float64(cnt.Total.DRAMReads)/float64(cnt.Rows))
}

// TestSamplingRadix: a radix run with few partitions hammers a handful of
// hot lines (fill counts, write-combining lines, slice headers) beside the
// streams. The sampling's estimator must not be misled by them, per phase
// as well as in total.
func TestSamplingRadix(t *testing.T) {
	keys := keysFor(2000000>>shift(), 1000, 9)
	g, err := cachesim.Parse(cachesim.DefaultGeometry(), "l1=48K l1ways=12 l2=2M l3=32M")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Geometry: g, Strategy: agg.Radix, Threads: 1, RadixBits: 1}
	full, err := Count(context.Background(), keys, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Sampling = AutoSampling(g, 1.0/16)
	smp, err := Count(context.Background(), keys, o)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, f, s int64, se float64) {
		d := float64(s-f) / float64(f)
		if d < 0 {
			d = -d
		}
		if d > 4*se+0.02 {
			t.Errorf("%s: sampled %d, full %d (%.1f%%), stated ±%.1f%%", what, s, f, 100*d, 100*se)
		}
	}
	check("total L1", full.Total.L1.Misses, smp.Total.L1.Misses, smp.Total.RelErr.L1)
	check("total DRAM", full.Total.DRAMReads, smp.Total.DRAMReads, smp.Total.RelErr.DRAMReads)
	for i := range full.Phases {
		f, s := full.Phases[i].Stats, smp.Phases[i].Stats
		check(full.Phases[i].Name+" L1", f.L1.Misses, s.L1.Misses, s.RelErr.L1)
		check(full.Phases[i].Name+" DRAM", f.DRAMReads, s.DRAMReads, s.RelErr.DRAMReads)
	}
}
