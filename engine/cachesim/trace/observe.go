package trace

import (
	"context"
	"fmt"

	"cachebook/engine/agg"
	"cachebook/engine/vec"
)

// AggOptions are the settings of the generic GROUP BY that Aggregate
// models beyond Options: those of the real run's agg.Config.
type AggOptions struct {
	PreAggGroups int
	GroupsHint   int64
	// Hasher is the real run's (nil: a new one), so that string keys
	// fall into the same partitions.
	Hasher *agg.Hasher
	// Reused is agg.TraceAggConfig's: agg.PreAggReused of the real run's
	// configuration when it started.
	Reused int64
}

// Aggregate models the engine's generic GROUP BY (agg.TraceAggregate:
// the real tables, partitions and pre-aggregation, with any keys the
// generic table takes) over the key columns keys, each holding every row,
// with one 8-byte input column per aggregate that has an input.
func Aggregate(ctx context.Context, keys []*vec.Vector, specs []agg.Spec, o Options, ao AggOptions) (*Result, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("trace: no key columns")
	}
	types := make([]vec.Type, len(keys))
	for c, k := range keys {
		types[c] = k.Type
		if k.Len != keys[0].Len {
			return nil, fmt.Errorf("trace: key columns of %d and %d rows", keys[0].Len, k.Len)
		}
	}
	if !agg.ObservedTraceable(types, specs) {
		return nil, fmt.Errorf("trace: this aggregation's shape is not traced")
	}
	n := keys[0].Len
	m, threads, rows, err := start(n, o)
	if err != nil {
		return nil, err
	}
	m.start()
	defer m.stop()
	kcols := make([]agg.TraceCol, len(keys))
	for c, k := range keys {
		if k.Type == vec.String {
			kcols[c] = agg.TraceCol{OffBuf: m.Alloc(0, int64(n+1)*4, false, false), Buf: m.Alloc(0, max(int64(len(k.Bytes)), 1), false, false)}
		} else {
			kcols[c] = agg.TraceCol{Buf: m.Alloc(0, int64(n)*8, false, false)}
		}
	}
	// The aggregates' inputs: their values do not change the accesses,
	// so every morsel reads zeros from one vector.
	acols := make([]agg.TraceCol, len(specs))
	args := make([]*vec.Vector, len(specs))
	for j, sp := range specs {
		acols[j].Buf = -1
		if sp.HasInput() {
			acols[j].Buf = m.Alloc(0, int64(n)*8, false, false)
			args[j] = &vec.Vector{Type: sp.In, Len: rows}
			if sp.In.IsFloat() {
				args[j].F64 = make([]float64, rows)
			} else {
				args[j].I64 = make([]int64, rows)
			}
		}
	}
	var ms []agg.TraceInput
	for lo := 0; lo < n; lo += rows {
		hi := min(lo+rows, n)
		ti := agg.TraceInput{In: agg.Input{N: hi - lo}}
		for c, k := range keys {
			ti.In.Keys = append(ti.In.Keys, k.Slice(lo, hi))
			col := kcols[c]
			if k.Type == vec.String {
				col.OffOff = int64(lo) * 4
			} else {
				col.Off = int64(lo) * 8
			}
			ti.Keys = append(ti.Keys, col)
		}
		for j, a := range args {
			col := acols[j]
			var v *vec.Vector
			if a != nil {
				v = a.Slice(0, hi-lo)
				col.Off = int64(lo) * 8
			}
			ti.In.Args = append(ti.In.Args, v)
			ti.Args = append(ti.Args, col)
		}
		ms = append(ms, ti)
	}
	hint := int64(n)
	if o.NoRowsHint {
		hint = 0
	}
	st, err := agg.TraceAggregate(ctx, agg.TraceAggConfig{
		TraceConfig:  agg.TraceConfig{Strategy: o.Strategy, Threads: threads, RadixBits: o.RadixBits, HugePages: o.HugePages, RowsHint: hint, Budget: o.budget()},
		PreAggGroups: ao.PreAggGroups, GroupsHint: ao.GroupsHint, Hasher: ao.Hasher, Reused: ao.Reused,
	}, types, specs, ms, m)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return m.result(int64(n), st.Groups)
}
