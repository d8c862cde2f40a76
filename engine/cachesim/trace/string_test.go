package trace

import (
	"context"
	"fmt"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/vec"
)

// stringKeys returns the keys of keysFor as strings ("u" and the number),
// one vector of every row.
func stringKeys(n, groups int, seed uint64) *vec.Vector {
	v := vec.NewVector(vec.String, n)
	for _, k := range keysFor(n, groups, seed) {
		v.AppendStr([]byte(fmt.Sprintf("u%d", uint64(k)%1e15)))
	}
	return v
}

// TestGenericString: the traced naive pass over string keys finds the
// real number of groups, and its modelled misses per row grow as the
// table (slots and stored keys) outgrows a small L3; radix finds the
// same groups in two phases.
func TestGenericString(t *testing.T) {
	g := cachesim.DefaultGeometry()
	g.L3.Size = 4 << 20
	specs := []agg.Spec{{Kind: agg.CountStar}}
	n := 1 << 18 >> shift()
	var dram []float64
	for _, groups := range []int{100, 1 << 10, 1 << 17 >> shift()} {
		keys := stringKeys(n, groups, 3)
		res, err := GenericString(context.Background(), keys, specs, Options{Geometry: g, Sampling: AutoSampling(g, 1.0/16), Strategy: agg.Naive})
		if err != nil {
			t.Fatal(err)
		}
		var distinct = map[string]bool{}
		for i := range keys.Len {
			distinct[string(keys.Str(i))] = true
		}
		if res.Groups != len(distinct) {
			t.Errorf("%d groups: modelled %d groups, distinct %d", groups, res.Groups, len(distinct))
		}
		d := float64(res.Total.DRAMReads) / float64(res.Rows)
		dram = append(dram, d)
		t.Logf("%7d string groups: L1 %.3f L2 %.3f DRAM %.3f per row (±%.1f%%)", groups,
			float64(res.Total.L1.Misses)/float64(res.Rows), float64(res.Total.L2.Misses)/float64(res.Rows), d, 100*res.Total.RelErr.Max())
	}
	// The key column (4 offset bytes and ~16 key bytes a row) streams
	// from DRAM at every size; 10⁵ groups (a 4 MiB table plus ~2 MiB of
	// stored keys) do not fit the 4 MiB L3 and miss on most rows.
	if dram[0] < 0.2 || dram[2] < dram[0]+0.5 {
		t.Errorf("DRAM reads/row %v: want the key column at 100 groups and most rows missing at the largest", dram)
	}
	keys := stringKeys(n, 1<<10, 3)
	naive, err := GenericString(context.Background(), keys, specs, Options{Geometry: g, Strategy: agg.Naive})
	if err != nil {
		t.Fatal(err)
	}
	radix, err := GenericString(context.Background(), keys, specs, Options{Geometry: g, Strategy: agg.Radix, RadixBits: 4})
	if err != nil || radix.Groups != naive.Groups || len(radix.Phases) != 2 {
		t.Errorf("radix over string keys: %v, %d groups (naive %d), %d phases", err, radix.Groups, naive.Groups, len(radix.Phases))
	}
}
