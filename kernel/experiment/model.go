package experiment

import (
	"context"
	"fmt"

	"cachebook/engine/cachesim"
)

// This file replays an experiment's access pattern through the cache
// model (engine/cachesim), so that its key comparison shows modelled
// misses beside the measured times, labelled modelled: what a learner on
// a machine without counters reads instead of the hardware's.

// Modelled is the cache model's count per access for one side of a
// comparison: L1 misses, and lines the model fetched from DRAM on
// demand, and with its hardware prefetcher.
type Modelled struct {
	Side            string  `json:"side"`
	L1MissesPer     float64 `json:"l1_misses_per"`
	DRAMDemandPer   float64 `json:"dram_demand_lines_per"`
	DRAMPrefetchPer float64 `json:"dram_prefetched_lines_per"`
	DRAMWritesPer   float64 `json:"dram_lines_written_per"`
}

// modelGeometry is the model's default geometry with its stride
// prefetcher on, as real cores have theirs; every set is simulated, which
// a prefetcher needs.
func modelGeometry() cachesim.Geometry {
	g := cachesim.DefaultGeometry()
	g.Prefetch = cachesim.PrefetchStride
	return g
}

// modelSide replays accesses (warm-up first, then the counted pass) and
// returns the counts per access of the counted pass, n accesses long.
func modelSide(ctx context.Context, side string, n int64, warm, pass func(s *cachesim.Sim) error) (Modelled, error) {
	sim, err := cachesim.New(modelGeometry(), cachesim.Sampling{})
	if err != nil {
		return Modelled{}, fmt.Errorf("model: %w", err)
	}
	if warm != nil {
		if err := warm(sim); err != nil {
			return Modelled{}, err
		}
	}
	m := sim.Mark()
	if err := pass(sim); err != nil {
		return Modelled{}, err
	}
	if err := ctx.Err(); err != nil {
		return Modelled{}, err
	}
	st := sim.Since(m)
	per := func(x int64) float64 { return float64(x) / float64(max(n, 1)) }
	return Modelled{Side: side, L1MissesPer: per(st.L1.Misses), DRAMDemandPer: per(st.DRAMReads),
		DRAMPrefetchPer: per(st.PrefetchReads), DRAMWritesPer: per(st.DRAMWrites)}, nil
}

// modelTable renders modelled sides as a table with a per-unit label.
func modelTable(title, unit string, sides []Modelled) Table {
	t := Table{Title: "modelled (cache model, not counters): " + title + "; " + modelGeometry().String(),
		Columns: []string{"side", "L1 misses/" + unit, "DRAM lines/" + unit + " (demand)", "DRAM lines/" + unit + " (prefetched)", "DRAM lines written/" + unit}}
	for _, m := range sides {
		t.Rows = append(t.Rows, []string{m.Side, fmtModelled(m.L1MissesPer), fmtModelled(m.DRAMDemandPer),
			fmtModelled(m.DRAMPrefetchPer), fmtModelled(m.DRAMWritesPer)})
	}
	return t
}

// modelEvery is how many modelled accesses pass between two looks at the
// context.
const modelEvery = 1 << 14

// fmtModelled formats a modelled count per access: three decimals for
// fractions of a line, whole lines for large counts.
func fmtModelled(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3f", x)
}
