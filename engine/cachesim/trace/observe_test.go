package trace

import (
	"context"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/vec"
)

// TestAggregateModel: the observed traced pass (Aggregate) of one integer
// key models about as many misses as the traced twin it replaces
// (Generic) where both run the same loops (no pre-aggregation), a second
// key column costs more DRAM lines per row than one, and set sampling
// agrees with the full simulation for radix (whose partition phase
// interleaves many hot lines with the streams, which misled the
// sampling's estimator when every row also touched its chunk's structs).
func TestAggregateModel(t *testing.T) {
	n := 1 << 19 >> shift()
	keys := keysFor(n, 1<<17>>shift(), 4)
	g := cachesim.DefaultGeometry()
	g.L3.Size = 2 << 20 >> shift()
	specs := []agg.Spec{{Kind: agg.CountStar}}
	one := &vec.Vector{Type: vec.Int64, I64: keys, Len: n}
	two := &vec.Vector{Type: vec.Int32, I64: make([]int64, n), Len: n}
	for i, k := range keys {
		two.I64[i] = k % 1000
	}
	perRow := func(r *Result) float64 { return float64(r.Total.DRAMReads) / float64(r.Rows) }
	for _, strat := range []agg.Strategy{agg.Naive, agg.Radix} {
		o := Options{Geometry: g, Strategy: strat, RadixBits: 6}
		old, err := Generic(context.Background(), keys, specs, o)
		if err != nil {
			t.Fatal(err)
		}
		off, err := Aggregate(context.Background(), []*vec.Vector{one}, specs, o, AggOptions{PreAggGroups: -1})
		if err != nil {
			t.Fatal(err)
		}
		pre, err := Aggregate(context.Background(), []*vec.Vector{one}, specs, o, AggOptions{})
		if err != nil {
			t.Fatal(err)
		}
		both, err := Aggregate(context.Background(), []*vec.Vector{two, one}, specs, o, AggOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if off.Groups != old.Groups || pre.Groups != old.Groups || both.Groups != old.Groups {
			t.Errorf("%v: groups %d (twin), %d, %d, %d (two keys)", strat, old.Groups, off.Groups, pre.Groups, both.Groups)
		}
		t.Logf("%v DRAM lines/row: twin %.3f, observed %.3f, with pre-aggregation %.3f, two keys %.3f", strat, perRow(old), perRow(off), perRow(pre), perRow(both))
		if r := perRow(off) / perRow(old); r < 0.7 || r > 1.3 {
			t.Errorf("%v: observed %.3f DRAM lines/row, the twin %.3f", strat, perRow(off), perRow(old))
		}
		if perRow(both) <= perRow(pre) {
			t.Errorf("%v: two keys %.3f DRAM lines/row, one %.3f", strat, perRow(both), perRow(pre))
		}
		if strat != agg.Radix {
			continue
		}
		o.Sampling = AutoSampling(g, 1.0/16)
		smp, err := Aggregate(context.Background(), []*vec.Vector{two, one}, specs, o, AggOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range both.Phases {
			f, s := p.Stats.DRAMReads, smp.Phases[i].Stats.DRAMReads
			d := float64(s-f) / float64(f)
			t.Logf("%s: DRAM %.3f/row sampled, %.3f full", p.Name, float64(s)/float64(n), float64(f)/float64(n))
			if se := smp.Phases[i].Stats.RelErr.DRAMReads; d > 4*se+0.05 || d < -4*se-0.05 {
				t.Errorf("%s: sampled %d DRAM lines, full %d (%.1f%%), stated ±%.1f%%", p.Name, s, f, 100*d, 100*se)
			}
		}
	}
}
