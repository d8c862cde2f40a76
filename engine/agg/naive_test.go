package agg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"cachebook/engine/vec"
)

// dealt returns a source of the rows of keys and args (one per spec, nil
// for count(*)) in morsels of m rows, dealt to workers 1..threads in turn
// (worker 0 takes them all), so that every worker folds a share of them.
func dealt(keys, args []*vec.Vector, m, threads int) Source {
	n := keys[0].Len
	var mu sync.Mutex
	next := make([]int, threads+1) // per worker, its next morsel
	for w := 1; w <= threads; w++ {
		next[w] = w - 1
	}
	step := max(threads, 1)
	return func(w int) (Input, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if w == 0 {
			step = 1
		}
		i := next[w]
		off := i * m
		if off >= n {
			return Input{}, false, nil
		}
		next[w] = i + step
		end := min(off+m, n)
		in := Input{N: end - off}
		for _, k := range keys {
			in.Keys = append(in.Keys, k.Slice(off, end))
		}
		for _, a := range args {
			if a == nil {
				in.Args = append(in.Args, nil)
				continue
			}
			in.Args = append(in.Args, a.Slice(off, end))
		}
		return in, true, nil
	}
}

// naiveRows formats an aggregation's output, a line per group, sorted.
func naiveRows(out *Output) []string {
	var rows []string
	for g := 0; g < out.Groups; g++ {
		var b strings.Builder
		for _, k := range out.Keys {
			b.WriteString(k.Format(g) + "|")
		}
		for _, a := range out.Aggs {
			b.WriteString(a.Format(g) + "|")
		}
		rows = append(rows, b.String())
	}
	slices.Sort(rows)
	return rows
}

// TestNaiveWorkersAgree checks that naive on 2 and 3 workers, with a table
// each merged at the end or one shared table, gives exactly the groups of
// one worker, for every aggregate: a worker's rows dropped or counted
// twice changes a count.
func TestNaiveWorkersAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	const rows = 30000
	intKey, strKey := vec.NewVector(vec.Int64, 0), vec.NewVector(vec.String, 0)
	iv, sv, fv := vec.NewVector(vec.Int64, 0), vec.NewVector(vec.String, 0), vec.NewVector(vec.Float64, 0)
	for i := 0; i < rows; i++ {
		g := r.IntN(500)
		if g == 0 {
			intKey.AppendNull()
			strKey.AppendNull()
		} else {
			intKey.AppendInt(int64(g))
			strKey.AppendStr([]byte(fmt.Sprintf("k%d", g)))
		}
		if v := r.IntN(60); v == 0 {
			iv.AppendNull()
			sv.AppendNull()
			fv.AppendNull()
		} else {
			iv.AppendInt(int64(v - 30))
			sv.AppendStr([]byte(fmt.Sprintf("s%02d", v)))
			fv.AppendFloat(float64(v) / 4)
		}
	}
	all := []Spec{{Kind: CountStar}, {Kind: Count, In: vec.Int64}, {Kind: Sum, In: vec.Int64}, {Kind: Avg, In: vec.Int64},
		{Kind: Min, In: vec.Int64}, {Kind: Max, In: vec.Int64}, {Kind: Min, In: vec.String}, {Kind: Max, In: vec.String},
		{Kind: Sum, In: vec.Float64}, {Kind: CountDistinct, In: vec.Int64}, {Kind: Sum, In: vec.Int64, Distinct: true},
		{Kind: Avg, In: vec.Int64, Distinct: true}, {Kind: CountDistinct, In: vec.String}}
	allArgs := []*vec.Vector{nil, iv, iv, iv, iv, iv, sv, sv, fv, iv, iv, iv, sv}
	for _, tc := range []struct {
		name  string
		keys  []*vec.Vector
		specs []Spec
		args  []*vec.Vector
	}{
		{"int key, every aggregate", []*vec.Vector{intKey}, all, allArgs},
		{"string key, every aggregate", []*vec.Vector{strKey}, all, allArgs},
		{"two keys, distinct", []*vec.Vector{intKey, strKey}, all[9:], allArgs[9:]},
		{"int key, tuned count", []*vec.Vector{intKey}, []Spec{{Kind: CountStar}, {Kind: CountStar}}, []*vec.Vector{nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kt []vec.Type
			for _, k := range tc.keys {
				kt = append(kt, k.Type)
			}
			one, err := Aggregate(context.Background(), kt, tc.specs, Config{Strategy: Naive}, dealt(tc.keys, tc.args, 1000, 0))
			if err != nil {
				t.Fatal(err)
			}
			want := naiveRows(one)
			if len(want) < 400 {
				t.Fatalf("%d groups: the input is not what the test means", len(want))
			}
			for _, cfg := range []Config{{Threads: 2}, {Threads: 3}, {Threads: 2, Shared: true}, {Threads: 3, Generic: true}} {
				cfg.Budget = &Budget{}
				a, err := New(kt, tc.specs, ChooseLoop(kt, tc.specs, cfg.Generic), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if w := a.Workers(); w != cfg.Threads {
					t.Errorf("%+v: %d workers", cfg, w)
				}
				a.Close()
				out, err := Aggregate(context.Background(), kt, tc.specs, cfg, dealt(tc.keys, tc.args, 1000, cfg.Threads))
				if err != nil {
					t.Fatal(err)
				}
				if got := naiveRows(out); !slices.Equal(got, want) {
					t.Errorf("threads=%d shared=%v: %d groups, want %d; first %q, want %q", cfg.Threads, cfg.Shared, len(got), len(want), got[:3], want[:3])
				}
				if u := cfg.Budget.Used(); u != 0 {
					t.Errorf("threads=%d shared=%v: %d bytes still charged", cfg.Threads, cfg.Shared, u)
				}
			}
		})
	}
}

// TestNaiveParts checks that naive hands its groups out in parts of at
// most PartGroups groups, that each part's keys are views cut to its own
// rows, and that the table stays charged until the aggregator closes.
func TestNaiveParts(t *testing.T) {
	const groups = PartGroups*2 + 100
	keys, vals := vec.NewVector(vec.String, 0), vec.NewVector(vec.Int64, 0)
	for i := 0; i < groups; i++ {
		keys.AppendStr([]byte(fmt.Sprintf("url-%07d", i)))
		vals.AppendInt(int64(i))
	}
	specs := []Spec{{Kind: CountStar}, {Kind: Sum, In: vec.Int64}}
	for _, threads := range []int{1, 2} {
		b := &Budget{}
		a, err := New([]vec.Type{vec.String}, specs, Generic, Config{Strategy: Naive, Threads: threads, Budget: b})
		if err != nil {
			t.Fatal(err)
		}
		src := dealt([]*vec.Vector{keys}, []*vec.Vector{nil, vals}, 4096, threads)
		for w := range a.Workers() {
			for {
				in, ok, err := src(w + 1)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				if err := a.Sink(w, in); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := a.Finalize(context.Background()); err != nil {
			t.Fatal(err)
		}
		table := b.Used()
		var parts, seen int
		var sum int64
		for {
			p, ok, err := a.Next(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			parts++
			seen += p.Groups
			if p.Groups > PartGroups {
				t.Errorf("a part of %d groups", p.Groups)
			}
			if kb := VectorBytes(p.Keys...); kb > int64(p.Groups)*20+64 {
				t.Errorf("a part of %d groups counts %d bytes of keys: not cut to its rows", p.Groups, kb)
			}
			for g := 0; g < p.Groups; g++ {
				sum += p.Aggs[1].I64[g]
				if k := p.Keys[0].Str(g); !strings.HasPrefix(string(k), "url-") {
					t.Fatalf("key %q", k)
				}
			}
			if u := b.Used(); u != table+p.Bytes {
				t.Errorf("charged %d with a part of %d out, want the table's %d and the part's", u, p.Bytes, table)
			}
			b.Grow(-p.Bytes)
		}
		if parts != 3 || seen != groups || sum != int64(groups)*(groups-1)/2 {
			t.Errorf("threads=%d: %d parts, %d groups, sum %d", threads, parts, seen, sum)
		}
		if b.Used() <= 0 {
			t.Error("the table was given back before the aggregator closed")
		}
		a.Close()
		if u := b.Used(); u != 0 {
			t.Errorf("%d bytes charged after Close", u)
		}
	}
}

// TestDistinctPairs checks count(DISTINCT x) over every integer-like type
// (the pair set) against a map, with NULLs, by group and without keys, on
// one worker and on three whose sets are merged.
func TestDistinctPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []vec.Type{vec.Bool, vec.Int16, vec.Int32, vec.Int64, vec.UInt64, vec.Date, vec.Timestamp} {
		const rows = 20000
		keys, vals := vec.NewVector(vec.Int64, 0), vec.NewVector(typ, 0)
		want := map[int64]map[int64]bool{}
		all := map[int64]bool{}
		for i := 0; i < rows; i++ {
			k := int64(r.IntN(40))
			keys.AppendInt(k)
			if want[k] == nil {
				want[k] = map[int64]bool{}
			}
			if r.IntN(10) == 0 {
				vals.AppendNull()
				continue
			}
			v := int64(r.IntN(3000)) - 1500
			switch typ {
			case vec.Bool:
				v &= 1
			case vec.UInt64:
				v = int64(uint64(v) | 1<<63)
			}
			vals.AppendInt(v)
			want[k][v], all[v] = true, true
		}
		specs := []Spec{{Kind: CountDistinct, In: typ}}
		for _, threads := range []int{1, 3} {
			cfg := Config{Strategy: Naive, Threads: threads, Budget: &Budget{}}
			out, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, specs, cfg, dealt([]*vec.Vector{keys}, []*vec.Vector{vals}, 512, threads))
			if err != nil {
				t.Fatal(err)
			}
			if out.Groups != len(want) {
				t.Fatalf("%s threads=%d: %d groups, want %d", typ, threads, out.Groups, len(want))
			}
			for g := 0; g < out.Groups; g++ {
				if got, w := out.Aggs[0].I64[g], len(want[out.Keys[0].I64[g]]); got != int64(w) {
					t.Errorf("%s threads=%d group %d: count(DISTINCT) %d, want %d", typ, threads, out.Keys[0].I64[g], got, w)
				}
			}
			one, err := Aggregate(context.Background(), nil, specs, cfg, dealt([]*vec.Vector{keys}, []*vec.Vector{vals}, 512, threads))
			if err != nil {
				t.Fatal(err)
			}
			if got := one.Aggs[0].I64[0]; got != int64(len(all)) {
				t.Errorf("%s threads=%d without keys: count(DISTINCT) %d, want %d", typ, threads, got, len(all))
			}
			if u := cfg.Budget.Used(); u != 0 {
				t.Errorf("%s threads=%d: %d bytes still charged", typ, threads, u)
			}
		}
	}
}

// TestCountNaiveParts checks the tuned count loop's parts: at most
// PartGroups groups each, every group once (the NULL group too), each
// count(*) column its own, and nothing charged after Close.
func TestCountNaiveParts(t *testing.T) {
	const groups = PartGroups*2 + 10
	keys := vec.NewVector(vec.Int32, 0)
	for i := 0; i < 2*groups; i++ {
		if i%1000 == 0 {
			keys.AppendNull()
			continue
		}
		keys.AppendInt(int64(i % groups))
	}
	specs := []Spec{{Kind: CountStar}, {Kind: CountStar}}
	for _, threads := range []int{1, 2} {
		b := &Budget{}
		a, err := New([]vec.Type{vec.Int32}, specs, CountLoop, Config{Strategy: Naive, Threads: threads, Budget: b})
		if err != nil {
			t.Fatal(err)
		}
		src := dealt([]*vec.Vector{keys}, []*vec.Vector{nil, nil}, 4096, threads)
		for w := range a.Workers() {
			for {
				in, ok, err := src(w + 1)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				if err := a.Sink(w, in); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := a.Finalize(context.Background()); err != nil {
			t.Fatal(err)
		}
		var parts, seen, nullGroups int
		var rows int64
		for {
			p, ok, err := a.Next(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			parts++
			seen += p.Groups
			if p.Groups > PartGroups || p.Keys[0].Type != vec.Int32 {
				t.Errorf("a part of %d groups of %s", p.Groups, p.Keys[0].Type)
			}
			for g := 0; g < p.Groups; g++ {
				rows += p.Aggs[0].I64[g]
				if p.Aggs[1].I64[g] != p.Aggs[0].I64[g] {
					t.Fatal("the two count(*) columns differ")
				}
				if p.Keys[0].IsNull(g) {
					nullGroups++
				}
			}
			p.Aggs[1].I64[0] = -1 // its own copy: the next part is not changed
			b.Grow(-p.Bytes)
		}
		if parts != 3 || seen != groups+1 || rows != 2*groups || nullGroups != 1 { // every key, and NULL
			t.Errorf("threads=%d: %d parts, %d groups (want %d), %d rows, %d NULL groups", threads, parts, seen, groups+1, rows, nullGroups)
		}
		a.Close()
		if u := b.Used(); u != 0 {
			t.Errorf("threads=%d: %d bytes charged after Close", threads, u)
		}
	}
}
