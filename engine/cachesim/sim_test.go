package cachesim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func mustSim(t testing.TB, g Geometry, s Sampling) *Sim {
	t.Helper()
	sim, err := New(g, s)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

// sampledCount is one level's count in a full and a sampled run, with the
// error the sampled run states for it.
type sampledCount struct {
	name      string
	full, smp int64
	se        float64
}

// sampledCounts pairs the L1, L2 and DRAM counts of a full and a sampled run.
func sampledCounts(full, smp Stats) []sampledCount {
	return []sampledCount{
		{"L1", full.L1.Misses, smp.L1.Misses, smp.RelErr.L1},
		{"L2", full.L2.Misses, smp.L2.Misses, smp.RelErr.L2},
		{"DRAM", full.DRAMReads, smp.DRAMReads, smp.RelErr.DRAMReads},
	}
}

func run(t testing.TB, sim *Sim, p Pattern) Stats {
	t.Helper()
	st, err := p.Run(context.Background(), sim)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Counts a learner can work out by hand.
func TestExactCounts(t *testing.T) {
	g := DefaultGeometry() // 32 KiB L1, 1 MiB L2, 32 MiB L3
	lines := int64(4<<20) / 64
	tests := []struct {
		name              string
		p                 Pattern
		l1, l2, dram, acc int64
	}{
		// 4 MiB twice: every line misses L1 and L2 both passes (the set is
		// larger than both), L3 holds it after the first.
		{"sequential", Pattern{Name: "sequential", Size: 4 << 20, Passes: 2}, 2 * lines, 2 * lines, lines, 2 * lines * 8},
		// One word per line: as many misses as reads.
		{"strided64", Pattern{Name: "strided", Size: 4 << 20, Stride: 64, Passes: 1}, lines, lines, lines, lines},
		// Stride 4 KiB over 1 MiB: 256 lines, all in one L1 set of 8 ways;
		// L2 (1024 sets) has them in 16 sets... 256 lines of stride 4096
		// map to 1024/64=16 L2 sets of 16 ways: 256 fit. Pass two hits L2.
		{"strided4k", Pattern{Name: "strided", Size: 1 << 20, Stride: 4096, Passes: 2}, 512, 256, 256, 512},
		// 16 KiB fits L1: only the first pass misses.
		{"fits", Pattern{Name: "sequential", Size: 16 << 10, Passes: 3}, 256, 256, 256, 3 * 2048},
		// A 2 KiB table of 16 B slots holds 32 lines, 128 slots: 10000
		// probes touch each line once from memory.
		{"hashprobe", Pattern{Name: "hashprobe", Size: 2 << 10, N: 10000}, 32, 32, 32, 10000},
		// A cycle over 64 MiB (1M lines) of which each line is written
		// first: the chase then misses L1 and L2 on every step and L3
		// (32 MiB) on every step too, since LRU evicts each line before
		// it comes round again.
		{"chase", Pattern{Name: "chase", Size: 64 << 20, N: 1 << 20}, 1 << 20, 1 << 20, 1 << 20, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := run(t, mustSim(t, g, Sampling{}), tc.p)
			if st.L1.Misses != tc.l1 || st.L2.Misses != tc.l2 || st.DRAMReads != tc.dram || st.Lines != tc.acc {
				t.Errorf("L1 %d L2 %d DRAM %d lines %d, want %d %d %d %d", st.L1.Misses, st.L2.Misses, st.DRAMReads, st.Lines, tc.l1, tc.l2, tc.dram, tc.acc)
			}
		})
	}
}

func TestLRUThrash(t *testing.T) {
	// A 2-way L1 of 2 sets alone: lines 0, 2, 4 share set 0. Under LRU
	// cycling three lines through two ways misses every time.
	g := Geometry{LineSize: 64, L1: Level{Size: 256, Ways: 2}}
	sim := mustSim(t, g, Sampling{})
	for i := 0; i < 30; i++ {
		sim.Load(uint64(64*2*(i%3)), 8)
	}
	if st := sim.Stats(); st.L1.Misses != 30 {
		t.Errorf("3 lines in a 2-way set: %d misses, want 30", st.L1.Misses)
	}
	sim = mustSim(t, g, Sampling{})
	for i := 0; i < 30; i++ {
		sim.Load(uint64(64*2*(i%2)), 8)
	}
	if st := sim.Stats(); st.L1.Misses != 2 {
		t.Errorf("2 lines in a 2-way set: %d misses, want 2", st.L1.Misses)
	}
}

func TestWriteBack(t *testing.T) {
	// L1 of 4 lines and nothing else: storing to 10 lines reads each for
	// ownership and writes back the 6 evicted dirty lines.
	g := Geometry{LineSize: 64, L1: Level{Size: 256, Ways: 2}}
	sim := mustSim(t, g, Sampling{})
	for i := 0; i < 10; i++ {
		sim.Store(uint64(64*i), 8)
	}
	st := sim.Stats()
	if st.DRAMReads != 10 || st.DRAMWrites != 6 {
		t.Errorf("reads %d writes %d, want 10 and 6", st.DRAMReads, st.DRAMWrites)
	}
	// Loads evict clean lines: no write-backs.
	sim = mustSim(t, g, Sampling{})
	for i := 0; i < 10; i++ {
		sim.Load(uint64(64*i), 8)
	}
	if st := sim.Stats(); st.DRAMWrites != 0 {
		t.Errorf("loads wrote back %d lines", st.DRAMWrites)
	}
	// Through three levels a written stream much larger than L3 reaches
	// memory: all but at most the lines the caches still hold.
	g = DefaultGeometry()
	g.L3.Size = 2 << 20
	sim = mustSim(t, g, Sampling{})
	n := int64(16 << 20 / 64)
	for i := int64(0); i < n; i++ {
		sim.Store(uint64(64*i), 8)
	}
	st = sim.Stats()
	held := (g.L1.Size + g.L2.Size + g.L3.Size) / 64
	if st.DRAMWrites < n-held || st.DRAMWrites > n {
		t.Errorf("write-backs %d, want between %d and %d", st.DRAMWrites, n-held, n)
	}
}

func TestStraddle(t *testing.T) {
	sim := mustSim(t, DefaultGeometry(), Sampling{})
	sim.Load(60, 8)
	if st := sim.Stats(); st.Lines != 2 || st.L1.Misses != 2 || st.Loads != 1 {
		t.Errorf("straddling load: %+v", st)
	}
}

func TestTLB(t *testing.T) {
	g := DefaultGeometry()
	for _, tc := range []struct {
		base  uint64
		pages int64
	}{{PatternBase, 64 << 20 / 4096}, {HugeBase, 64 << 20 / (2 << 20)}} {
		sim := mustSim(t, g, Sampling{})
		for a := uint64(0); a < 64<<20; a += 64 {
			sim.Load(tc.base+a, 8)
		}
		if st := sim.Stats(); st.TLBWalks != tc.pages || st.TLB1Misses != tc.pages {
			t.Errorf("base %#x: %d L1 TLB misses, %d walks, want %d", tc.base, st.TLB1Misses, st.TLBWalks, tc.pages)
		}
	}
	// 16 pages fit the 64-entry L1 TLB: a second pass hits.
	sim := mustSim(t, g, Sampling{})
	for pass := 0; pass < 2; pass++ {
		for a := uint64(0); a < 16*4096; a += 4096 {
			sim.Load(PatternBase+a, 8)
		}
	}
	if st := sim.Stats(); st.TLB1Misses != 16 {
		t.Errorf("16 pages twice: %d L1 TLB misses, want 16", st.TLB1Misses)
	}
}

func TestSampling(t *testing.T) {
	g := DefaultGeometry()
	for _, p := range []Pattern{
		{Name: "random", Size: 64 << 20, N: 1 << 21},
		{Name: "hashprobe", Size: 8 << 20, N: 1 << 21},
		{Name: "sequential", Size: 8 << 20, Passes: 2},
	} {
		full := run(t, mustSim(t, g, Sampling{}), p)
		smp := run(t, mustSim(t, g, Sampling{Mod: 64, Keep: 8}), p)
		for _, c := range sampledCounts(full, smp) {
			rel := math.Abs(float64(c.smp-c.full)) / float64(c.full)
			// Within 4 standard errors (and the estimate is finite).
			if math.IsInf(c.se, 0) || rel > 4*c.se+0.001 {
				t.Errorf("%s %s: sampled %d vs full %d (%.2f%%), stated error ±%.2f%%", p.Name, c.name, c.smp, c.full, 100*rel, 100*c.se)
			}
		}
		if smp.Lines != full.Lines {
			t.Errorf("%s: sampled run counted %d accesses, want %d", p.Name, smp.Lines, full.Lines)
		}
	}
	// A stride of 4 KiB maps every line to one residue: the sampled sets
	// either see all of it (and the estimate is exact) or none (and the
	// stated error must say that nothing could be estimated).
	for _, base := range []uint64{0, 64 * 1, 64 * 2, 64 * 3, 64 * 5} {
		sim := mustSim(t, g, Sampling{Mod: 64, Keep: 8})
		for a := uint64(0); a < 64<<20; a += 4096 {
			sim.Load(base+a, 8)
		}
		smp := sim.Stats()
		if exact := int64(64 << 20 / 4096); smp.L1.Misses != exact && !math.IsInf(smp.RelErr.L1, 1) {
			t.Errorf("strided 4 KiB from %d: %d misses (want %d) with stated error ±%.1f%%", base, smp.L1.Misses, exact, 100*smp.RelErr.L1)
		}
	}
}

func TestPrefetch(t *testing.T) {
	g := DefaultGeometry()
	p := Pattern{Name: "sequential", Size: 8 << 20, Passes: 1}
	off := run(t, mustSim(t, g, Sampling{}), p)
	for _, pf := range []Prefetch{PrefetchNextLine, PrefetchStride} {
		g.Prefetch = pf
		on := run(t, mustSim(t, g, Sampling{}), p)
		if on.L1.Misses != off.L1.Misses {
			t.Errorf("%s: prefetch into L2 changed L1 misses: %d vs %d", pf, on.L1.Misses, off.L1.Misses)
		}
		if on.DRAMReads*2 > off.DRAMReads || on.PrefetchReads == 0 {
			t.Errorf("%s: demand DRAM reads %d (off: %d), prefetched %d", pf, on.DRAMReads, off.DRAMReads, on.PrefetchReads)
		}
		if on.DRAMReads+on.PrefetchReads < off.DRAMReads {
			t.Errorf("%s: lines from memory %d < %d without prefetch", pf, on.DRAMReads+on.PrefetchReads, off.DRAMReads)
		}
		if _, err := New(g, Sampling{Mod: 64, Keep: 4}); !errors.Is(err, ErrPrefetchSampling) {
			t.Errorf("%s with sampling: %v", pf, err)
		}
	}
	// Random reads give the stride prefetcher nothing to follow.
	g.Prefetch = PrefetchStride
	on := run(t, mustSim(t, g, Sampling{}), Pattern{Name: "random", Size: 64 << 20, N: 1 << 20})
	if on.PrefetchIssued > on.L1.Misses/100 {
		t.Errorf("random: %d prefetches for %d misses", on.PrefetchIssued, on.L1.Misses)
	}
}

func TestTranspose(t *testing.T) {
	// 512×512 int64 is 2 MiB per matrix. Row by row the writes to B walk
	// a column: each touches a new line and L1 keeps none of them long
	// enough (512 lines per column > 512 lines of L1), so about one miss
	// per store; 8×8 tiles use each line of B eight times.
	g := DefaultGeometry()
	naive := run(t, mustSim(t, g, Sampling{}), Pattern{Name: "transpose", Dim: 512})
	blocked := run(t, mustSim(t, g, Sampling{}), Pattern{Name: "transpose-blocked", Dim: 512, Block: 8})
	n := int64(512 * 512)
	if naive.L1.Misses < n || naive.L1.Misses > n+n/8+n/8 {
		t.Errorf("naive transpose: %d L1 misses, want about %d", naive.L1.Misses, n+n/8)
	}
	if want := n / 8 * 2; blocked.L1.Misses < want || blocked.L1.Misses > want+want/4 {
		t.Errorf("blocked transpose: %d L1 misses, want about %d", blocked.L1.Misses, want)
	}
}

func TestParse(t *testing.T) {
	g, err := Parse(DefaultGeometry(), "l1=48K l1ways=12 l2=2M l3=none prefetch=stride tlb1=72 tlb1ways=72")
	if err != nil {
		t.Fatal(err)
	}
	if g.L1.Size != 48<<10 || g.L1.Ways != 12 || g.L2.Size != 2<<20 || g.L3.Size != 0 || g.Prefetch != PrefetchStride || g.TLB1.Entries != 72 {
		t.Errorf("parsed %+v", g)
	}
	if !strings.Contains(g.String(), "L3 none") {
		t.Errorf("String: %s", g)
	}
	for _, bad := range []string{"l1=33K", "l1", "l9=1M", "l2=1M l2ways=0", "prefetch=maybe", "l1=none", "line=48", "l3=-1M", "tlb1=10 tlb1ways=4"} {
		if _, err := Parse(DefaultGeometry(), bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestParsePattern(t *testing.T) {
	p, err := ParsePattern(DefaultPattern("strided"), "size=8M stride=256 passes=3")
	if err != nil || p.Size != 8<<20 || p.Stride != 256 || p.Passes != 3 {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []struct{ name, spec string }{
		{"strided", "stride=3"}, {"chase", "size=3M"}, {"random", "size=0"}, {"nope", ""},
		{"transpose-blocked", "block=0"}, {"sequential", "size=1T"}, {"random", "n=-1"}, {"random", "x=1"},
	} {
		if _, err := ParsePattern(DefaultPattern(bad.name), bad.spec); err == nil {
			t.Errorf("%s %q accepted", bad.name, bad.spec)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Pattern{Name: "random", Size: 1 << 20, N: 1 << 22}.Run(ctx, mustSim(t, DefaultGeometry(), Sampling{}))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("l1=32K l2=1M l3=32M")
	f.Add("l1=48K l1ways=12 prefetch=next-line")
	f.Add("line=128 tlb2=1536 tlb2ways=12")
	f.Fuzz(func(t *testing.T, spec string) {
		g, err := Parse(DefaultGeometry(), spec)
		if err != nil {
			return
		}
		if g.L1.Size > 1<<24 || g.L2.Size > 1<<26 || g.L3.Size > 1<<26 || g.TLB1.Entries+g.TLB2.Entries > 1<<16 {
			return // valid but too large to simulate in a fuzz iteration
		}
		sim, err := New(g, Sampling{})
		if err != nil {
			t.Fatalf("valid geometry %q: %v", spec, err)
		}
		sim.Load(12345, 8)
		_ = sim.Stats().Format(g, 1)
	})
}

func FuzzParsePattern(f *testing.F) {
	f.Add("random", "size=1M n=1000")
	f.Add("transpose-blocked", "dim=64 block=8")
	f.Fuzz(func(t *testing.T, name, spec string) {
		p, err := ParsePattern(DefaultPattern(name), spec)
		if err != nil {
			return
		}
		if p.accesses() > 1<<16 || p.Size > 1<<24 {
			return
		}
		sim, err := New(Geometry{LineSize: 64, L1: Level{Size: 4096, Ways: 4}}, Sampling{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background(), sim); err != nil {
			t.Fatalf("valid pattern %+v: %v", p, err)
		}
	})
}
