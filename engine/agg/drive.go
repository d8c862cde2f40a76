package agg

import (
	"context"
	"fmt"
	"sync"

	"cachebook/engine/vec"
)

// Output is all the groups of an aggregation that Aggregate ran.
type Output struct {
	Keys   []*vec.Vector
	Aggs   []*vec.Vector
	Groups int
	// TableSlots is the largest hash table's capacity in slots.
	TableSlots int
	// PreAgg says what pre-aggregation before partitioning did.
	PreAgg PreAggStats
}

// Aggregate runs a GROUP BY over src to the end with the loop ChooseLoop
// picks, on workers of its own, and returns all its groups in one set of
// columns, charged to nothing. It is the driver of tests and of tools
// that model the aggregation; the engine runs an Aggregator itself. With
// one worker, src is asked as worker 0; with several, as workers 1 to
// Threads.
func Aggregate(ctx context.Context, keyTypes []vec.Type, specs []Spec, cfg Config, src Source) (*Output, error) {
	a, err := New(keyTypes, specs, ChooseLoop(keyTypes, specs, cfg.Generic), cfg)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	var mu sync.Mutex
	var parts []Part
	defer func() {
		for _, p := range parts {
			cfg.Budget.Grow(-p.Bytes)
		}
	}()
	sink := func(w, slot int) error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
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
		}
	}
	next := func(_, slot int) error {
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
	if err := phases(a.Workers(), sink, func() error { return a.Finalize(ctx) }, next); err != nil {
		return nil, err
	}
	st := a.Stats()
	out := &Output{TableSlots: st.TableSlots, PreAgg: st.PreAgg}
	if len(parts) == 1 {
		p := parts[0]
		out.Keys, out.Aggs, out.Groups = p.Keys, p.Aggs, p.Groups
		return out, nil
	}
	cols := make([][]*vec.Vector, len(parts))
	for i, p := range parts {
		cols[i] = p.Keys
		out.Groups += p.Groups
	}
	if out.Keys, err = concat(keyTypes, cols); err != nil {
		return nil, err
	}
	outTypes := make([]vec.Type, len(specs))
	for j, sp := range specs {
		outTypes[j] = sp.OutType()
	}
	for i, p := range parts {
		cols[i] = p.Aggs
	}
	out.Aggs, err = concat(outTypes, cols)
	return out, err
}

// phases runs one on every worker, then between (once), then two on every
// worker, each worker on its own goroutine unless there is one.
func phases(threads int, one func(w, slot int) error, between func() error, two func(w, slot int) error) error {
	if threads == 1 {
		if err := Safely(0, func() error { return one(0, 0) }); err != nil {
			return err
		}
		if err := between(); err != nil {
			return err
		}
		return Safely(0, func() error { return two(0, 0) })
	}
	run := func(f func(w, slot int) error) error {
		errs := make([]error, threads)
		var wg sync.WaitGroup
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[t] = Safely(t+1, func() error { return f(t+1, t) })
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := run(one); err != nil {
		return err
	}
	if err := between(); err != nil {
		return err
	}
	return run(two)
}

// concat joins the parts' columns, each sized once: column c of the
// result holds column c of every part in turn.
func concat(types []vec.Type, parts [][]*vec.Vector) ([]*vec.Vector, error) {
	out := make([]*vec.Vector, len(types))
	col := make([]*vec.Vector, 0, len(parts))
	for c, t := range types {
		col = col[:0]
		for _, vs := range parts {
			if vs != nil {
				col = append(col, vs[c])
			}
		}
		v, err := vec.Concat(t, col)
		if err != nil {
			return nil, fmt.Errorf("the groups' column %d: %w", c+1, err)
		}
		out[c] = v
	}
	return out, nil
}
