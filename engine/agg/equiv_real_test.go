package agg

import (
	"context"
	"fmt"

	"cachebook/engine/vec"
)

// equivStats is what the equivalence test compares between a traced run
// and the real one.
type equivStats struct {
	Groups, TableSlots           int
	PartGroups                   []int // per radix partition (nil for naive)
	PartitionRows, AggregateRows int64
	PreAgg                       PreAggStats
}

// realRun runs the real aggregation over morsels and reads back what the
// equivalence test compares: this is the one place that knows the real
// run's API (Aggregate, Output). Morsel i goes to worker i%threads+1 (or
// 0 with one thread), as the traced run deals them. Groups per partition
// come from hashing the output's keys with cfg.Hasher, which must be set.
func realRun(ctx context.Context, keyTypes []vec.Type, specs []Spec, cfg Config, morsels []Input) (*equivStats, error) {
	threads := max(cfg.Threads, 1)
	next := make([]int, threads+1)
	src := func(w int) (Input, bool, error) {
		slot := max(w-1, 0)
		i := next[w]*threads + slot
		if cfg.Strategy == Naive {
			i = next[w]
		}
		if i >= len(morsels) {
			return Input{}, false, nil
		}
		next[w]++
		return morsels[i], true, nil
	}
	out, err := Aggregate(ctx, keyTypes, specs, cfg, src)
	if err != nil {
		return nil, err
	}
	if out.Parts != nil || out.Emitted {
		return nil, fmt.Errorf("realRun: want the groups in Output.Keys")
	}
	st := &equivStats{Groups: out.Groups, TableSlots: out.TableSlots, PreAgg: out.PreAgg}
	for _, s := range out.Stats {
		switch s.Phase {
		case "partition":
			st.PartitionRows += s.Rows
		case "aggregate":
			st.AggregateRows += s.Rows
		}
	}
	if cfg.Strategy == Radix && out.Groups > 0 {
		st.PartGroups = make([]int, 1<<cfg.RadixBits)
		hs := make([]uint64, out.Groups)
		cfg.Hasher.Hash(out.Keys, out.Groups, hs)
		for _, h := range hs {
			st.PartGroups[RadixPartition(h, cfg.RadixBits)]++
		}
	}
	return st, nil
}
