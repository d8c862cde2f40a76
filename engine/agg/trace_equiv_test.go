package agg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"cachebook/engine/vec"
)

// equivShape is a GROUP BY shape of the equivalence test and its input.
type equivShape struct {
	name     string
	keyTypes []vec.Type
	specs    []Spec
	tuned    bool // the tuned count loop takes it unless Config.Generic
}

// equivInput returns rows rows of the shape in morsels of morselRows:
// 60% of the rows draw from 400 hot keys, the rest from 30,000, so that
// pre-aggregation windows fold some rows and pass others on.
func equivInput(sh equivShape, rows, morselRows int) []Input {
	var out []Input
	x := uint64(1)
	for lo := 0; lo < rows; lo += morselRows {
		n := min(morselRows, rows-lo)
		in := Input{N: n}
		keys := make([]int64, n)
		for i := range keys {
			x = x*6364136223846793005 + 1442695040888963407
			r := x >> 33
			if r%10 < 6 {
				keys[i] = int64(r % 400)
			} else {
				keys[i] = int64(r % 30000)
			}
		}
		for _, t := range sh.keyTypes {
			v := vec.NewVector(t, n)
			for _, k := range keys {
				switch t {
				case vec.String:
					v.AppendStr([]byte(fmt.Sprintf("https://example.org/page/%d", k)))
				case vec.Int32:
					v.AppendInt(k % 37)
				default:
					v.AppendInt(k)
				}
			}
			in.Keys = append(in.Keys, v)
		}
		for _, sp := range sh.specs {
			if !sp.HasInput() {
				in.Args = append(in.Args, nil)
				continue
			}
			v := vec.NewVector(sp.In, n)
			for i := range n {
				v.AppendInt(int64((lo + i) % 1000))
			}
			in.Args = append(in.Args, v)
		}
		out = append(out, in)
	}
	return out
}

// traceInputs gives each morsel's columns buffers of their own.
func traceInputs(ms []Input, tr Tracer) []TraceInput {
	col := func(v *vec.Vector) TraceCol {
		if v == nil {
			return TraceCol{Buf: -1}
		}
		if v.Type == vec.String {
			return TraceCol{Buf: tr.Alloc(0, int64(len(v.Bytes))+1, false, false), OffBuf: tr.Alloc(0, int64(len(v.Offsets))*4, false, false)}
		}
		return TraceCol{Buf: tr.Alloc(0, int64(v.Len)*8, false, false)}
	}
	var out []TraceInput
	for _, m := range ms {
		ti := TraceInput{In: m}
		for _, k := range m.Keys {
			ti.Keys = append(ti.Keys, col(k))
		}
		for _, a := range m.Args {
			ti.Args = append(ti.Args, col(a))
		}
		out = append(out, ti)
	}
	return out
}

// TestTraceMatchesReal pins the traced passes to the real aggregation:
// for every strategy, loop, pre-aggregation setting and thread count, on
// the same input, the traced run builds as many groups, tables as large
// (slots), partitions of the same groups and the same rows per phase
// (the rows whose hashing, probing and scattering the accesses report),
// and pre-aggregates the same rows into the same partial groups with the
// same flushes, as the real run.
func TestTraceMatchesReal(t *testing.T) {
	const morselRows, bits = 16_384, 4
	rows := 120_000
	if raceEnabled {
		rows = 40_000
	}
	shapes := []equivShape{
		{name: "int key, count(*)", keyTypes: []vec.Type{vec.Int64}, specs: []Spec{{Kind: CountStar}}, tuned: true},
		{name: "int key, sum, min", keyTypes: []vec.Type{vec.Int64}, specs: []Spec{{Kind: Sum, In: vec.Int64}, {Kind: Min, In: vec.Int64}}},
		{name: "string key, count(*)", keyTypes: []vec.Type{vec.String}, specs: []Spec{{Kind: CountStar}}},
		{name: "two int keys, count(*)", keyTypes: []vec.Type{vec.Int32, vec.Int64}, specs: []Spec{{Kind: CountStar}}},
		// Packed into one word (the one above takes two).
		{name: "two small int keys, count(*)", keyTypes: []vec.Type{vec.Int16, vec.Int32}, specs: []Spec{{Kind: CountStar}}},
	}
	var matrix []string
	for _, sh := range shapes {
		ms := equivInput(sh, rows, morselRows)
		loops := []string{"generic"}
		if sh.tuned {
			loops = []string{"tuned", "generic"}
		}
		for _, loop := range loops {
			for _, strat := range []Strategy{Naive, Radix} {
				for _, pre := range []int{0, 1024, -1} {
					for _, threads := range []int{1, 2} {
						if strat == Naive && (pre != -1 || threads != 1) {
							continue // naive neither pre-aggregates nor runs threads
						}
						if loop == "tuned" && pre != -1 {
							continue // the tuned loop does not pre-aggregate
						}
						// Huge pages change which windows pre-aggregation
						// judges as fresh memory (an arena without a pool
						// keeps nothing): one row with them per window.
						huge := pre == 1024 && threads == 1
						name := fmt.Sprintf("%s/%s/%v/preagg=%d/threads=%d", sh.name, loop, map[Strategy]string{Naive: "naive", Radix: "radix"}[strat], pre, threads)
						if huge {
							name += "/huge"
						}
						t.Run(name, func(t *testing.T) {
							cfg := Config{Strategy: strat, Threads: threads, RadixBits: bits, Hasher: NewHasher(), RowsHint: int64(rows),
								GroupsHint: 20_000, PreAggGroups: pre, Generic: loop == "generic", HugePages: huge}
							real, err := realRun(context.Background(), sh.keyTypes, sh.specs, cfg, ms)
							if err != nil {
								t.Fatal(err)
							}
							traced, err := tracedRun(sh, loop, cfg, ms)
							if err != nil {
								t.Fatal(err)
							}
							row := compareEquiv(t, sh, cfg, ms, real, traced)
							matrix = append(matrix, name+"\t"+row)
						})
					}
				}
			}
		}
	}
	t.Logf("equivalence (traced = real):\n%s", strings.Join(matrix, "\n"))
}

// tracedRun runs the traced pass for loop over ms with cfg.
func tracedRun(sh equivShape, loop string, cfg Config, ms []Input) (*TraceAggStats, error) {
	tr := &recorder{}
	tc := TraceConfig{Strategy: cfg.Strategy, Threads: cfg.Threads, RadixBits: cfg.RadixBits, RowsHint: cfg.RowsHint}
	if loop == "tuned" {
		var rows int64
		for _, m := range ms {
			rows += int64(m.N)
		}
		col := tr.Alloc(0, rows*8, false, false)
		var tm []TraceMorsel
		rows = 0
		for _, m := range ms {
			tm = append(tm, TraceMorsel{Keys: m.Keys[0].I64[:m.N], Buf: col, Off: rows * 8})
			rows += int64(m.N)
		}
		st, err := TraceCountStats(context.Background(), tc, tm, tr)
		if err == nil && tr.bad != "" {
			err = errors.New(tr.bad)
		}
		if err == nil {
			st.AggregateRows = rows
			if cfg.Strategy == Radix {
				st.PartitionRows = rows
			}
		}
		return st, err
	}
	st, err := TraceAggregate(context.Background(), TraceAggConfig{TraceConfig: tc, PreAggGroups: cfg.PreAggGroups, GroupsHint: cfg.GroupsHint, Hasher: cfg.Hasher,
		Reused: PreAggReused(cfg)},
		sh.keyTypes, sh.specs, traceInputs(ms, tr), tr)
	if err == nil && tr.bad != "" {
		err = errors.New(tr.bad) // an access outside its buffer
	}
	return st, err
}

// compareEquiv fails t where traced and real differ and returns the
// matrix row: groups, slots, partition groups, partition rows, phase rows,
// pre-aggregation, accesses.
func compareEquiv(t *testing.T, sh equivShape, cfg Config, ms []Input, real *equivStats, traced *TraceAggStats) string {
	t.Helper()
	verdict := func(ok bool) string {
		if ok {
			return "="
		}
		return "DIFFERS"
	}
	var cells []string
	check := func(what string, ok bool, got, want any) {
		if !ok {
			t.Errorf("%s: traced %v, real %v", what, got, want)
		}
		cells = append(cells, what+" "+verdict(ok))
	}
	check("groups", traced.Groups == real.Groups, traced.Groups, real.Groups)
	// A radix worker's table keeps its slots from one partition to the
	// next, so with several workers the largest table depends on which
	// partitions each worker claimed: the real run claims them as it goes,
	// the traced one deals them round-robin. Then the largest table may
	// differ by one doubling either way.
	slotsOK := traced.TableSlots == real.TableSlots
	if cfg.Threads > 1 && cfg.Strategy == Radix {
		slotsOK = traced.TableSlots*2 >= real.TableSlots && traced.TableSlots <= real.TableSlots*2
	}
	check("slots", slotsOK, traced.TableSlots, real.TableSlots)
	if cfg.Strategy == Radix {
		check("part groups", slices.Equal(traced.PartGroups, real.PartGroups), traced.PartGroups, real.PartGroups)
		// Rows per partition: the real run does not report them; without
		// pre-aggregation they are the input's rows by the top bits of
		// their hashes, with it their sum is the aggregate phase's rows.
		if !PreAggregates(sh.keyTypes, sh.specs, cfg) {
			want := make([]int, 1<<cfg.RadixBits)
			for _, m := range ms {
				hs := make([]uint64, m.N)
				cfg.Hasher.Hash(m.Keys, m.N, hs)
				for _, h := range hs {
					want[RadixPartition(h, cfg.RadixBits)]++
				}
			}
			check("part rows (input)", slices.Equal(traced.PartRows, want), traced.PartRows, want)
		} else {
			var sum int64
			for _, r := range traced.PartRows {
				sum += int64(r)
			}
			check("part rows (sum)", sum == real.AggregateRows, sum, real.AggregateRows)
		}
	}
	check("phase rows", traced.PartitionRows == real.PartitionRows && traced.AggregateRows == real.AggregateRows,
		[2]int64{traced.PartitionRows, traced.AggregateRows}, [2]int64{real.PartitionRows, real.AggregateRows})
	check("preagg", traced.PreAgg == real.PreAgg, traced.PreAgg, real.PreAgg)
	if p := real.PreAgg; p.Window > 0 {
		cells[len(cells)-1] += fmt.Sprintf(" (%d rows folded into %d, %d skipped, %d flushes, %d fresh)", p.Rows, p.Partial, p.Skipped, p.Flushes, p.Fresh)
	}
	if traced.Accesses < traced.AggregateRows {
		t.Errorf("traced %d accesses for %d rows aggregated", traced.Accesses, traced.AggregateRows)
	}
	cells = append(cells, fmt.Sprintf("accesses %d (%.1f/row)", traced.Accesses, float64(traced.Accesses)/float64(max(traced.PartitionRows, traced.AggregateRows))))
	return strings.Join(cells, "\t")
}
