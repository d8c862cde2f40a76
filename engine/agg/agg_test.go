package agg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"

	"cachebook/engine/vec"
)

// source splits key and value columns into morsels of size m.
func source(keys []*vec.Vector, vals *vec.Vector, m, nargs int) Source {
	var mu sync.Mutex
	off := 0
	n := keys[0].Len
	return func(int) (Input, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if off >= n {
			return Input{}, false, nil
		}
		end := min(off+m, n)
		in := Input{N: end - off}
		for _, k := range keys {
			in.Keys = append(in.Keys, k.Slice(off, end))
		}
		v := vals.Slice(off, end)
		in.Args = []*vec.Vector{nil, v, v, v, v, v, v}[:nargs]
		off = end
		return in, true, nil
	}
}

func TestStrategiesAgree(t *testing.T) {
	specs := []Spec{{Kind: CountStar}, {Kind: Count, In: vec.Int64}, {Kind: Sum, In: vec.Int64},
		{Kind: Min, In: vec.Int64}, {Kind: Max, In: vec.Int64}, {Kind: Avg, In: vec.Int64}, {Kind: CountDistinct, In: vec.Int64}}
	for _, tc := range []struct {
		name   string
		rows   int
		groups int
		str    bool
		nulls  bool
	}{
		{"int few groups", 10000, 10, false, false},
		{"int many groups", 50000, 20000, false, true},
		{"string keys", 30000, 3000, true, true},
		{"one row", 1, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			keys := vec.NewVector(vec.Int64, tc.rows)
			if tc.str {
				keys = vec.NewVector(vec.String, tc.rows)
			}
			vals := vec.NewVector(vec.Int64, tc.rows)
			want := map[string][7]int64{}
			for i := 0; i < tc.rows; i++ {
				g := r.IntN(tc.groups)
				name := fmt.Sprint(g)
				if tc.nulls && g == 0 {
					keys.AppendNull()
					name = "NULL"
				} else if tc.str {
					keys.AppendStr([]byte(name))
				} else {
					keys.AppendInt(int64(g))
				}
				v := int64(r.IntN(100) - 50)
				vals.AppendInt(v)
				w := want[name]
				if w[0] == 0 {
					w[3], w[4] = v, v
				}
				w[0]++
				w[1]++
				w[2] += v
				w[3] = min(w[3], v)
				w[4] = max(w[4], v)
				want[name] = w
			}
			for _, cfg := range []Config{{Strategy: Naive}, {Strategy: Radix, RadixBits: 4, Threads: 1},
				{Strategy: Radix, RadixBits: 8, Threads: 3}, {Strategy: Radix, RadixBits: 0, Threads: 2}} {
				out, err := Aggregate(context.Background(), []vec.Type{keys.Type}, specs, cfg, source([]*vec.Vector{keys}, vals, 777, 7))
				if err != nil {
					t.Fatal(err)
				}
				if out.Groups != len(want) {
					t.Fatalf("%+v: %d groups, want %d", cfg, out.Groups, len(want))
				}
				for g := 0; g < out.Groups; g++ {
					name := out.Keys[0].Format(g)
					w := want[name]
					got := [5]int64{out.Aggs[0].I64[g], out.Aggs[1].I64[g], out.Aggs[2].I64[g], out.Aggs[3].I64[g], out.Aggs[4].I64[g]}
					if got != [5]int64(w[:5]) {
						t.Fatalf("%+v group %s: got %v want %v", cfg, name, got, w[:5])
					}
					if avg := out.Aggs[5].F64[g]; avg != float64(w[2])/float64(w[0]) {
						t.Fatalf("avg %v", avg)
					}
					if d := out.Aggs[6].I64[g]; d < 1 || d > 100 {
						t.Fatalf("count distinct %d", d)
					}
				}
			}
		})
	}
}

func TestCountDistinctExact(t *testing.T) {
	keys := vec.NewVector(vec.Int64, 0)
	vals := vec.NewVector(vec.Int64, 0)
	// group 1: values 1,1,2,NULL → 2 distinct; group 2: 5 → 1.
	for _, kv := range [][2]int64{{1, 1}, {1, 1}, {1, 2}, {2, 5}, {1, -1}} {
		keys.AppendInt(kv[0])
		if kv[1] < 0 {
			vals.AppendNull()
		} else {
			vals.AppendInt(kv[1])
		}
	}
	out, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, []Spec{{Kind: CountDistinct, In: vec.Int64}, {Kind: Count, In: vec.Int64}},
		Config{Strategy: Naive}, func(int) (Input, bool, error) {
			if keys == nil {
				return Input{}, false, nil
			}
			in := Input{Keys: []*vec.Vector{keys}, Args: []*vec.Vector{vals, vals}, N: 5}
			keys = nil
			return in, true, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64][2]int64{}
	for g := 0; g < out.Groups; g++ {
		got[out.Keys[0].I64[g]] = [2]int64{out.Aggs[0].I64[g], out.Aggs[1].I64[g]}
	}
	want := map[int64][2]int64{1: {2, 3}, 2: {1, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestBudget(t *testing.T) {
	b := &Budget{Limit: 1 << 10}
	if _, err := NewTable([]vec.Type{vec.Int64}, 1000, b); err == nil {
		t.Fatal("expected memory limit error")
	}
}

func TestSumOverflow(t *testing.T) {
	s, _ := NewState(Spec{Kind: Sum, In: vec.Int64}, NewHasher(), nil)
	s.Resize(1)
	v := &vec.Vector{Type: vec.Int64, Len: 2, I64: []int64{1 << 62, 1 << 62}}
	s.Update([]uint32{0, 0}, v, 2)
	if _, err := s.Finalize(1); err == nil {
		t.Fatal("expected overflow")
	}
	s2, _ := NewState(Spec{Kind: Avg, In: vec.Int64}, NewHasher(), nil)
	s2.Resize(1)
	s2.Update([]uint32{0, 0}, v, 2)
	out, _ := s2.Finalize(1)
	if out.F64[0] != float64(int64(1)<<62) {
		t.Fatalf("avg %v", out.F64[0])
	}
}

func TestSortedKeysUnique(t *testing.T) {
	// Radix output must contain each key exactly once.
	keys := vec.NewVector(vec.Int64, 0)
	for i := 0; i < 5000; i++ {
		keys.AppendInt(int64(i % 1234))
	}
	out, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, []Spec{{Kind: CountStar}},
		Config{Strategy: Radix, RadixBits: 6, Threads: 2}, source([]*vec.Vector{keys}, keys, 100, 1))
	if err != nil {
		t.Fatal(err)
	}
	ks := append([]int64(nil), out.Keys[0].I64...)
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	for i := range ks {
		if ks[i] != int64(i) {
			t.Fatalf("key %d at %d", ks[i], i)
		}
	}
}

// TestRadixChunks checks the radix partition buffers against naive
// aggregation where chunks overflow: a hot key that sends a third of the
// rows to one partition, string keys and string inputs with NULLs, row hints
// that are absent, right and far too small, and arenas whose mappings are
// reused (holding the previous query's bytes) from a shared pool.
func TestRadixChunks(t *testing.T) {
	const rows = 60000
	r := rand.New(rand.NewPCG(3, 4))
	keys := vec.NewVector(vec.String, rows)
	vals := vec.NewVector(vec.String, rows)
	for i := 0; i < rows; i++ {
		switch g := r.IntN(9000); {
		case i%3 == 0:
			keys.AppendStr([]byte("https://hot.example/"))
		case g == 0:
			keys.AppendNull()
		default:
			keys.AppendStr(fmt.Appendf(nil, "https://site%d.example/%s", g, make([]byte, g%97)))
		}
		if r.IntN(10) == 0 {
			vals.AppendNull()
		} else {
			vals.AppendStr(fmt.Appendf(nil, "v%d", r.IntN(1e6)))
		}
	}
	specs := []Spec{{Kind: CountStar}, {Kind: Min, In: vec.String}, {Kind: Max, In: vec.String}, {Kind: Count, In: vec.String}}
	src := func() Source {
		var mu sync.Mutex
		off := 0
		return func(int) (Input, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if off >= rows {
				return Input{}, false, nil
			}
			end := min(off+1000, rows)
			v := vals.Slice(off, end)
			in := Input{N: end - off, Keys: []*vec.Vector{keys.Slice(off, end)}, Args: []*vec.Vector{nil, v, v, v}}
			off = end
			return in, true, nil
		}
	}
	result := func(out *Output) map[string]string {
		m := map[string]string{}
		for g := 0; g < out.Groups; g++ {
			m[out.Keys[0].Format(g)] = fmt.Sprint(out.Aggs[0].Format(g), out.Aggs[1].Format(g), out.Aggs[2].Format(g), out.Aggs[3].Format(g))
		}
		return m
	}
	want, err := Aggregate(context.Background(), []vec.Type{vec.String}, specs, Config{Strategy: Naive}, src())
	if err != nil {
		t.Fatal(err)
	}
	wantM := result(want)
	pool := NewPool(1<<30, nil)
	for _, hint := range []int64{0, rows, rows / 50} {
		for _, huge := range []bool{false, true} {
			for _, cfg := range []Config{{Strategy: Radix, RadixBits: 5, Threads: 1}, {Strategy: Radix, RadixBits: 3, Threads: 2}, {Strategy: Radix, RadixBits: 0, Threads: 1}} {
				cfg.RowsHint, cfg.HugePages, cfg.Pool = hint, huge, pool
				out, err := Aggregate(context.Background(), []vec.Type{vec.String}, specs, cfg, src())
				if err != nil {
					t.Fatalf("%+v: %v", cfg, err)
				}
				got := result(out)
				if len(got) != len(wantM) {
					t.Fatalf("hint %d huge %v %+v: %d groups, want %d", hint, huge, cfg, len(got), len(wantM))
				}
				for k, w := range wantM {
					if got[k] != w {
						t.Fatalf("hint %d huge %v %+v: group %q = %s, want %s", hint, huge, cfg, k, got[k], w)
					}
				}
			}
		}
	}
}

// TestNullsInSomeMorsels feeds key and input columns that have NULLs in
// some morsels and none (a nil validity slice) in others, as row groups of
// a Parquet file arrive: the radix scatter must extend a partition's NULL
// mask for the rows of a morsel without NULLs.
func TestNullsInSomeMorsels(t *testing.T) {
	// NULL keys in the first and third morsel, or only from the third on:
	// the tables' string loop, which takes no NULLs, then has made groups
	// before the first NULL key arrives.
	for _, nullMorsels := range [][]int{{0, 2}, {2}} {
		t.Run(fmt.Sprint(nullMorsels), func(t *testing.T) { testNullsInSomeMorsels(t, nullMorsels) })
	}
}

func testNullsInSomeMorsels(t *testing.T, nullMorsels []int) {
	const rows, morsel = 30000, 4096
	keys := vec.NewVector(vec.Int64, rows)
	skeys := vec.NewVector(vec.String, rows)
	vals := vec.NewVector(vec.Int64, rows)
	fvals := vec.NewVector(vec.Float64, rows)
	type acc struct{ n, cnt, sum int64 }
	want := map[string]acc{}
	for i := 0; i < rows; i++ {
		nullRow := slices.Contains(nullMorsels, i/morsel) && i%17 == 0
		name := fmt.Sprint(i % 5)
		if nullRow {
			keys.AppendNull()
			skeys.AppendNull()
			name = "NULL"
		} else {
			keys.AppendInt(int64(i % 5))
			skeys.AppendStr([]byte(name))
		}
		a := want[name]
		a.n++
		if (i/morsel == 1 || i/morsel == 2) && i%13 == 0 {
			vals.AppendNull()
			fvals.AppendNull()
		} else {
			vals.AppendInt(int64(i))
			fvals.AppendFloat(float64(i))
			a.cnt++
			a.sum += int64(i)
		}
		want[name] = a
	}
	src := func(keys *vec.Vector) Source {
		var mu sync.Mutex
		off := 0
		return func(int) (Input, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if off >= rows {
				return Input{}, false, nil
			}
			end := min(off+morsel, rows)
			in := Input{N: end - off}
			for _, v := range []*vec.Vector{keys, vals, fvals} {
				s := v.Slice(off, end)
				if s.Valid != nil && !slices.Contains(s.Valid, false) {
					s.Valid = nil
				}
				in.Keys = append(in.Keys, s)
			}
			in.Keys, in.Args = in.Keys[:1], []*vec.Vector{nil, in.Keys[1], in.Keys[1], in.Keys[2], in.Keys[2]}
			off = end
			return in, true, nil
		}
	}
	specs := []Spec{{Kind: CountStar}, {Kind: Count, In: vec.Int64}, {Kind: Sum, In: vec.Int64},
		{Kind: Count, In: vec.Float64}, {Kind: Sum, In: vec.Float64}}
	for _, k := range []*vec.Vector{keys, skeys} {
		for _, cfg := range []Config{{Strategy: Naive}, {Strategy: Radix, RadixBits: 4, Threads: 1},
			{Strategy: Radix, RadixBits: 3, Threads: 3}, {Strategy: Naive, Generic: true}} {
			out, err := Aggregate(context.Background(), []vec.Type{k.Type}, specs, cfg, src(k))
			if err != nil {
				t.Fatalf("%v %+v: %v", k.Type, cfg, err)
			}
			if out.Groups != len(want) {
				t.Fatalf("%v %+v: %d groups, want %d", k.Type, cfg, out.Groups, len(want))
			}
			for g := 0; g < out.Groups; g++ {
				name := out.Keys[0].Format(g)
				w := want[name]
				got := acc{out.Aggs[0].I64[g], out.Aggs[1].I64[g], out.Aggs[2].I64[g]}
				if got != w || out.Aggs[3].I64[g] != w.cnt || out.Aggs[4].F64[g] != float64(w.sum) {
					t.Fatalf("%v %+v group %s: got %v %d %v, want %v", k.Type, cfg, name, got,
						out.Aggs[3].I64[g], out.Aggs[4].F64[g], w)
				}
			}
		}
	}
}

// TestWorkerPanic injects a panic on one worker of the parallel strategy
// (in its source, which evaluates the query's expressions on the worker):
// the statement fails with a *PanicError and the process survives.
func TestWorkerPanic(t *testing.T) {
	keys := vec.NewVector(vec.Int64, 0)
	for i := 0; i < 10000; i++ {
		keys.AppendInt(int64(i % 100))
	}
	for _, phase := range []string{"source"} {
		inner := source([]*vec.Vector{keys}, keys, 100, 2)
		src := func(w int) (Input, bool, error) {
			if phase == "source" && w == 2 {
				var a []int
				_ = a[w] // index out of range, as the scatter bug did
			}
			return inner(w)
		}
		cfg := Config{Strategy: Radix, RadixBits: 2, Threads: 3}
		for _, generic := range []bool{false, true} {
			cfg.Generic = generic
			_, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, []Spec{{Kind: CountStar}, {Kind: Sum, In: vec.Int64}}, cfg, src)
			var pe *PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("%s generic=%v: err = %v, want a *PanicError", phase, generic, err)
			}
			if len(pe.Stack) == 0 {
				t.Fatalf("%s: no stack", phase)
			}
		}
	}
}

// TestSumAvgDistinct checks sum(DISTINCT x) and avg(DISTINCT x) per group,
// with NULLs and repeated values, under every strategy.
func TestSumAvgDistinct(t *testing.T) {
	keys := vec.NewVector(vec.Int64, 0)
	vals := vec.NewVector(vec.Int64, 0)
	fvals := vec.NewVector(vec.Float64, 0)
	// group 1: 1, 1, 2, NULL → sum 3, avg 1.5; group 2: 5, 5 → 5; group 3: NULL → NULL.
	for _, kv := range [][2]int64{{1, 1}, {2, 5}, {1, 1}, {1, 2}, {2, 5}, {1, -1}, {3, -1}} {
		keys.AppendInt(kv[0])
		if kv[1] < 0 {
			vals.AppendNull()
			fvals.AppendNull()
		} else {
			vals.AppendInt(kv[1])
			fvals.AppendFloat(float64(kv[1]))
		}
	}
	specs := []Spec{{Kind: Sum, In: vec.Int64, Distinct: true}, {Kind: Avg, In: vec.Int64, Distinct: true},
		{Kind: Sum, In: vec.Float64, Distinct: true}, {Kind: Sum, In: vec.Int64}}
	src := func() Source {
		var mu sync.Mutex
		off := 0
		return func(int) (Input, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if off >= keys.Len {
				return Input{}, false, nil
			}
			end := min(off+2, keys.Len)
			v, f := vals.Slice(off, end), fvals.Slice(off, end)
			in := Input{N: end - off, Keys: []*vec.Vector{keys.Slice(off, end)}, Args: []*vec.Vector{v, v, f, v}}
			off = end
			return in, true, nil
		}
	}
	want := map[int64]string{1: "3 1.5 3 4", 2: "5 5 5 10", 3: "NULL NULL NULL NULL"}
	for _, cfg := range []Config{{Strategy: Naive}, {Strategy: Radix, RadixBits: 2, Threads: 1}, {Strategy: Radix, RadixBits: 1, Threads: 2}} {
		out, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, specs, cfg, src())
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < out.Groups; g++ {
			got := fmt.Sprintf("%s %s %s %s", out.Aggs[0].Format(g), out.Aggs[1].Format(g), out.Aggs[2].Format(g), out.Aggs[3].Format(g))
			if k := out.Keys[0].I64[g]; got != want[k] {
				t.Errorf("%+v group %d: %s, want %s", cfg, k, got, want[k])
			}
		}
	}
}

// TestMinMaxNaN checks that MIN and MAX order NaN as DuckDB does (greater
// than every number), whatever the row order.
func TestMinMaxNaN(t *testing.T) {
	nan := math.NaN()
	for _, order := range [][]float64{{nan, 1, math.Inf(1), -2}, {1, -2, math.Inf(1), nan}, {nan, nan}} {
		keys := vec.NewVector(vec.Int64, 0)
		vals := vec.NewVector(vec.Float64, 0)
		for _, f := range order {
			keys.AppendInt(1)
			vals.AppendFloat(f)
		}
		out, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, []Spec{{Kind: CountStar}, {Kind: Min, In: vec.Float64}, {Kind: Max, In: vec.Float64}},
			Config{Strategy: Naive}, source([]*vec.Vector{keys}, vals, 1, 3))
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := out.Aggs[1].F64[0], out.Aggs[2].F64[0]
		wantLo := -2.0
		if len(order) == 2 {
			wantLo = nan
		}
		if vec.CompareFloat(lo, wantLo) != 0 || !math.IsNaN(hi) {
			t.Errorf("%v: min %v max %v, want %v NaN", order, lo, hi, wantLo)
		}
	}
}

// TestFloatKeys groups every NaN (whatever its payload) into one group and
// -0.0 with 0.0, as DuckDB does, under every strategy.
func TestFloatKeys(t *testing.T) {
	keys := vec.NewVector(vec.Float64, 0)
	nan2 := math.Float64frombits(0x7ff8000000000002)
	for _, f := range []float64{math.NaN(), 0, math.Copysign(0, -1), nan2, -math.NaN(), 1, 0, math.Inf(1)} {
		keys.AppendFloat(f)
	}
	for _, cfg := range []Config{{Strategy: Naive}, {Strategy: Radix, RadixBits: 3, Threads: 1}, {Strategy: Radix, RadixBits: 2, Threads: 2}} {
		out, err := Aggregate(context.Background(), []vec.Type{vec.Float64}, []Spec{{Kind: CountStar}}, cfg,
			source([]*vec.Vector{keys}, keys, 3, 1))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for g := 0; g < out.Groups; g++ {
			got[out.Keys[0].Format(g)] += out.Aggs[0].I64[g]
		}
		// -0.0 and 0.0 are one group, shown as whichever came first.
		if got["nan"] != 3 || got["0"]+got["-0"] != 3 || got["1"] != 1 || got["inf"] != 1 || out.Groups != 4 {
			t.Errorf("%+v: groups %v (%d), want NaN ×3, ±0 ×3, 1, inf", cfg, got, out.Groups)
		}
	}
}

// TestNext: a radix aggregator hands every group out exactly once, a
// partition at a time, each part charged from when Next returns it until
// its consumer releases it; a consumer that stops after two parts and
// closes the aggregator leaves only those parts charged, whatever the
// number of workers.
func TestNext(t *testing.T) {
	const rows, groups = 40000, 5000
	keys := vec.NewVector(vec.String, rows)
	vals := vec.NewVector(vec.Int64, rows)
	for i := range rows {
		keys.AppendStr(fmt.Appendf(nil, "key-%d", i*7919%groups))
		vals.AppendInt(int64(i % 10))
	}
	specs := []Spec{{Kind: CountStar}, {Kind: Sum, In: vec.Int64}}
	ctx := context.Background()
	for _, threads := range []int{1, 3} {
		for _, pre := range []int{0, -1} { // with and without pre-aggregation
			name := fmt.Sprintf("threads=%d pre=%d", threads, pre)
			budget := &Budget{}
			cfg := Config{Strategy: Radix, RadixBits: 4, Threads: threads, Budget: budget, PreAggGroups: pre}
			sinkAll := func() Aggregator {
				a, err := New([]vec.Type{vec.String}, specs, Generic, cfg)
				if err != nil {
					t.Fatal(err)
				}
				src := source([]*vec.Vector{keys}, vals, 1000, 2)
				err = phases(a.Workers(), func(w, slot int) error {
					for {
						in, ok, err := src(w)
						if err != nil || !ok {
							return errors.Join(err, a.Flush(slot))
						}
						if err := a.Sink(slot, in); err != nil {
							return err
						}
					}
				}, func() error { return a.Finalize(ctx) }, func(int, int) error { return nil })
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return a
			}
			a := sinkAll()
			var parts, got int
			seen := map[string]int64{}
			for w := 0; ; w = (w + 1) % threads {
				p, ok, err := a.Next(ctx, w)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !ok {
					break
				}
				if p.Bytes < VectorBytes(p.Keys...) || budget.Used() < p.Bytes {
					t.Errorf("%s: part of %d bytes, %d charged", name, p.Bytes, budget.Used())
				}
				parts++
				got += p.Groups
				for g := range p.Groups {
					k := p.Keys[0].Format(g)
					if _, dup := seen[k]; dup {
						t.Fatalf("%s: group %s handed out twice", name, k)
					}
					seen[k] = p.Aggs[0].I64[g]
				}
				budget.Grow(-p.Bytes) // the consumer drops it
			}
			if st := a.Stats(); got != groups || st.Groups != groups || !st.Complete {
				t.Fatalf("%s: %d groups handed out in %d parts, stats %+v; want %d", name, got, parts, st, groups)
			}
			if parts < 2 {
				t.Errorf("%s: %d parts, want one per non-empty partition", name, parts)
			}
			var total int64
			for _, c := range seen {
				total += c
			}
			if total != rows {
				t.Errorf("%s: counts sum to %d, want %d", name, total, rows)
			}
			a.Close()
			if u := budget.Used(); u != 0 {
				t.Errorf("%s: %d bytes still charged after the parts were dropped and the aggregator closed", name, u)
			}

			// The consumer stops after two parts.
			a = sinkAll()
			var held int64
			for range 2 {
				p, ok, err := a.Next(ctx, 0)
				if err != nil || !ok {
					t.Fatalf("%s: %v %v", name, ok, err)
				}
				held += p.Bytes
			}
			if st := a.Stats(); st.Complete {
				t.Errorf("%s: complete after two parts", name)
			}
			a.Close()
			if u := budget.Used(); u != held {
				t.Errorf("%s: %d bytes charged after closing, want the two parts' %d", name, u, held)
			}
			budget.Grow(-held)
		}
	}
}
