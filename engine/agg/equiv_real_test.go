package agg

import (
	"context"
	"sync"

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
// run's API (an Aggregator driven as the engine drives it: Sink, Flush,
// Finalize, then Next). Morsel i goes to worker i%threads+1 (or 0 with one
// thread), as the traced run deals them. Groups per partition come from
// hashing each part's keys with cfg.Hasher, which must be set.
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
	a, err := New(keyTypes, specs, ChooseLoop(keyTypes, specs, cfg.Generic), cfg)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	sunk := make([]int64, a.Workers())
	sink := func(w, slot int) error {
		for {
			in, ok, err := src(w)
			if err != nil {
				return err
			}
			if !ok {
				return a.Flush(slot)
			}
			if err := a.Sink(slot, in); err != nil {
				return err
			}
			sunk[slot] += int64(in.N)
		}
	}
	var mu sync.Mutex
	var parts []Part
	drain := func(_, slot int) error {
		for {
			p, ok, err := a.Next(ctx, slot)
			if err != nil || !ok {
				return err
			}
			mu.Lock()
			parts = append(parts, p)
			mu.Unlock()
		}
	}
	defer func() {
		for _, p := range parts {
			cfg.Budget.Grow(-p.Bytes)
		}
	}()
	if err := phases(a.Workers(), sink, func() error { return a.Finalize(ctx) }, drain); err != nil {
		return nil, err
	}
	st := a.Stats()
	es := &equivStats{TableSlots: st.TableSlots, PreAgg: st.PreAgg}
	var in, folded int64
	for _, n := range sunk {
		in += n
	}
	for _, p := range parts {
		es.Groups += p.Groups
		folded += p.Rows
	}
	if st.SinkPhase == "partition" {
		es.PartitionRows, es.AggregateRows = in, folded
	} else {
		es.AggregateRows = in
	}
	if cfg.Strategy == Radix && es.Groups > 0 {
		es.PartGroups = make([]int, 1<<cfg.RadixBits)
		for _, p := range parts {
			hs := make([]uint64, p.Groups)
			cfg.Hasher.Hash(p.Keys, p.Groups, hs)
			for _, h := range hs {
				es.PartGroups[RadixPartition(h, cfg.RadixBits)]++
			}
		}
	}
	return es, nil
}
