package trace

import (
	"context"
	"flag"
	"math"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
)

// TestTimeSamplingAgrees models the article's query on article-shaped keys
// with every set and access simulated, then with time sampling alone and
// with time and set sampling, and checks that the sampled L1 and L2
// misses and DRAM reads and writes per row are within three of their
// stated standard errors (plus 1% for the stale cache contents a window
// starts from) of the full simulation, for naive and radix.
func TestTimeSamplingAgrees(t *testing.T) {
	rows := 1 << 21 >> (2 * shift())
	g := cachesim.EPYC9124()
	g.L3.Size = 4 << 20 >> shift()
	if *tsRows > 0 {
		rows, g.L3.Size = *tsRows, *tsL3<<20
	}
	keys := userKeys(rows, 11)
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"naive", Options{Strategy: agg.Naive}},
		{"radix 1024", Options{Strategy: agg.Radix, Threads: 1, RadixBits: 10}},
	} {
		if *tsOnly != "" && *tsOnly != c.name {
			continue
		}
		o := c.o
		o.Geometry = g
		full, err := Count(context.Background(), keys, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []cachesim.Sampling{
			{Every: *tsEvery, Window: *tsWindow, Warmup: *tsWarm},
			withEvery(AutoSampling(g, 1.0/16), *tsEvery),
		} {
			if s.Window == 0 {
				s.Window, s.Warmup = *tsWindow, *tsWarm
			}
			o.Sampling = s
			smp, err := Count(context.Background(), keys, o)
			if err != nil {
				t.Fatal(err)
			}
			n := float64(rows)
			for _, v := range []struct {
				name      string
				got, want int64
				err       float64
			}{
				{"L1 misses", smp.Total.L1.Misses, full.Total.L1.Misses, smp.Total.RelErr.L1},
				{"L2 misses", smp.Total.L2.Misses, full.Total.L2.Misses, smp.Total.RelErr.L2},
				{"DRAM reads", smp.Total.DRAMReads, full.Total.DRAMReads, smp.Total.RelErr.DRAMReads},
				{"DRAM writes", smp.Total.DRAMWrites, full.Total.DRAMWrites, smp.Total.RelErr.DRAMWrites},
			} {
				d := float64(v.got-v.want) / float64(max(v.want, 1))
				t.Logf("%s, %s: %s %.4f/row vs %.4f/row full: %+.2f%% (stated ±%.2f%%: sets ±%.2f%%, time ±%.2f%%)", c.name, smp.Sampling, v.name,
					float64(v.got)/n, float64(v.want)/n, 100*d, 100*v.err, 100*pick(smp.Total.SetErr, v.name), 100*pick(smp.Total.TimeErr, v.name))
				if math.Abs(d) > 3*v.err+0.01 {
					t.Errorf("%s, %s: %s %d vs %d full (%+.2f%%), beyond 3 × ±%.2f%% + 1%%", c.name, smp.Sampling, v.name, v.got, v.want, 100*d, 100*v.err)
				}
			}
			if smp.Total.Lines != full.Total.Lines || smp.Total.Loads != full.Total.Loads {
				t.Errorf("%s: lines %d, loads %d; full %d, %d (exact either way)", c.name, smp.Total.Lines, smp.Total.Loads, full.Total.Lines, full.Total.Loads)
			}
		}
	}
}

var (
	tsEvery  = flag.Int("ts-every", 8, "TestTimeSamplingAgrees: 1 window in N (-1: AutoEvery)")
	tsWindow = flag.Int64("ts-window", 0, "TestTimeSamplingAgrees: window, line accesses (0: default)")
	tsWarm   = flag.Int64("ts-warm", 0, "TestTimeSamplingAgrees: warm-up, line accesses (0: default)")
	tsOnly   = flag.String("ts-only", "", "TestTimeSamplingAgrees: only this strategy (naive, radix 1024)")
	tsRows   = flag.Int("ts-rows", 0, "TestTimeSamplingAgrees: rows (0: 2M, with a 4 MiB L3)")
	tsL3     = flag.Int64("ts-l3", 16, "TestTimeSamplingAgrees: L3 MiB with -ts-rows")
)

func pick(e cachesim.ErrorEstimate, name string) float64 {
	switch name {
	case "L1 misses":
		return e.L1
	case "L2 misses":
		return e.L2
	case "DRAM reads":
		return e.DRAMReads
	}
	return e.DRAMWrites
}
