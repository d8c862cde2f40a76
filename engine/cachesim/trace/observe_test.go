package trace

import (
	"context"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/vec"
)

// TestAggregateModel: the traced generic pass (Aggregate) finds the
// groups, a second key column costs more DRAM lines per row than one,
// with naive and with radix, and with 4096 partitions set sampling agrees
// with the full simulation. With 64 it does not (logged, not checked):
// the partition phase's few hot lines (the partitions' counts and current
// chunks) are interleaved with the chunks' structs, so the sampling's
// ratio estimator counts them as fresh lines in a handful of residues and
// the phase comes out at about twice its DRAM lines.
func TestAggregateModel(t *testing.T) {
	n, groups := 1<<18>>shift(), 1<<16>>shift()
	keys := keysFor(n, groups, 4)
	g := cachesim.DefaultGeometry()
	g.L3.Size = 1 << 20 >> shift()
	specs := []agg.Spec{{Kind: agg.CountStar}}
	one := &vec.Vector{Type: vec.Int64, I64: keys, Len: n}
	two := &vec.Vector{Type: vec.Int32, I64: make([]int64, n), Len: n}
	for i, k := range keys {
		two.I64[i] = k % 1000
	}
	perRow := func(r *Result) float64 { return float64(r.Total.DRAMReads) / float64(r.Rows) }
	run := func(o Options, keys []*vec.Vector, ao AggOptions) *Result {
		t.Helper()
		res, err := Aggregate(context.Background(), keys, specs, o, ao)
		if err != nil {
			t.Fatal(err)
		}
		if res.Groups != groups {
			t.Errorf("%d groups, want %d", res.Groups, groups)
		}
		return res
	}
	for _, strat := range []agg.Strategy{agg.Naive, agg.Radix} {
		o := Options{Geometry: g, Strategy: strat, RadixBits: 6}
		off := run(o, []*vec.Vector{one}, AggOptions{PreAggGroups: -1})
		pre := run(o, []*vec.Vector{one}, AggOptions{})
		both := run(o, []*vec.Vector{two, one}, AggOptions{})
		t.Logf("%v DRAM lines/row: one key %.3f, with pre-aggregation %.3f, two keys %.3f", strat, perRow(off), perRow(pre), perRow(both))
		if perRow(both) <= perRow(pre) {
			t.Errorf("%v: two keys %.3f DRAM lines/row, one %.3f", strat, perRow(both), perRow(pre))
		}
	}
	for _, bits := range []int{6, 12} {
		o := Options{Geometry: g, Strategy: agg.Radix, RadixBits: bits}
		full := run(o, []*vec.Vector{two, one}, AggOptions{})
		o.Sampling = AutoSampling(g, 1.0/16)
		smp := run(o, []*vec.Vector{two, one}, AggOptions{})
		for i, p := range full.Phases {
			f, s := p.Stats.DRAMReads, smp.Phases[i].Stats.DRAMReads
			d := float64(s-f) / float64(f)
			t.Logf("%d partitions, %s: DRAM %.3f/row sampled, %.3f full", 1<<bits, p.Name, float64(s)/float64(n), float64(f)/float64(n))
			if se := smp.Phases[i].Stats.RelErr.DRAMReads; bits >= 12 && (d > 4*se+0.05 || d < -4*se-0.05) {
				t.Errorf("%s: sampled %d DRAM lines, full %d (%.1f%%), stated ±%.1f%%", p.Name, s, f, 100*d, 100*se)
			}
		}
	}
}
