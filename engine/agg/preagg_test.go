package agg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"cachebook/engine/vec"
)

// preAggInput is a table for the pre-aggregation tests: two key columns
// (an integer with NULLs, a string) and one input column per aggregate.
type preAggInput struct {
	keys  []*vec.Vector
	args  []*vec.Vector
	specs []Spec
}

// newPreAggInput builds rows rows whose group is key(i).
func newPreAggInput(rows int, key func(i int) int) preAggInput {
	k1, k2 := vec.NewVector(vec.Int64, rows), vec.NewVector(vec.String, rows)
	v, f := vec.NewVector(vec.Int64, rows), vec.NewVector(vec.Float64, rows)
	s, u := vec.NewVector(vec.String, rows), vec.NewVector(vec.UInt64, rows)
	f4 := vec.NewVector(vec.Float32, rows)
	for i := range rows {
		g := key(i)
		if g%31 == 30 {
			k1.AppendNull()
		} else {
			k1.AppendInt(int64(g % 97))
		}
		k2.AppendStr([]byte(fmt.Sprintf("key-%d", g)))
		if i%13 == 0 {
			v.AppendNull()
		} else {
			v.AppendInt(int64(i%201 - 100))
		}
		switch {
		case i%17 == 0:
			f.AppendNull()
		case i%1001 == 0:
			f.AppendFloat(math.NaN())
		default:
			f.AppendFloat(float64(i%64) / 4) // sums are exact in any order
		}
		if i%19 == 0 {
			s.AppendNull()
		} else {
			s.AppendStr([]byte(fmt.Sprintf("s%03d", (i*7)%300)))
		}
		u.AppendInt(int64(uint64(1)<<63 + uint64(i%1000)))
		f4.AppendFloat(float64(i%8) - 3.5)
	}
	in := preAggInput{keys: []*vec.Vector{k1, k2}}
	add := func(sp Spec, col *vec.Vector) {
		in.specs = append(in.specs, sp)
		in.args = append(in.args, col)
	}
	add(Spec{Kind: CountStar}, nil)
	for _, k := range []Kind{Count, Sum, Avg, Min, Max} {
		add(Spec{Kind: k, In: vec.Int64}, v)
		add(Spec{Kind: k, In: vec.Float64}, f)
	}
	add(Spec{Kind: Count, In: vec.String}, s)
	add(Spec{Kind: Min, In: vec.String}, s)
	add(Spec{Kind: Max, In: vec.String}, s)
	add(Spec{Kind: Min, In: vec.UInt64}, u)
	add(Spec{Kind: Max, In: vec.UInt64}, u)
	add(Spec{Kind: Sum, In: vec.Float32}, f4)
	add(Spec{Kind: Max, In: vec.Float32}, f4)
	return in
}

// source returns the table as morsels of m rows.
func (p preAggInput) source(m int) Source {
	var rows [][2]int
	n := p.keys[0].Len
	for off := 0; off < n; off += m {
		rows = append(rows, [2]int{off, min(off+m, n)})
	}
	next := make(chan [2]int, len(rows))
	for _, r := range rows {
		next <- r
	}
	close(next)
	return func(int) (Input, bool, error) {
		r, ok := <-next
		if !ok {
			return Input{}, false, nil
		}
		in := Input{N: r[1] - r[0]}
		for _, k := range p.keys {
			in.Keys = append(in.Keys, k.Slice(r[0], r[1]))
		}
		for _, a := range p.args {
			if a != nil {
				a = a.Slice(r[0], r[1])
			}
			in.Args = append(in.Args, a)
		}
		return in, true, nil
	}
}

// rowsOf renders an aggregation's groups as sorted lines.
func rowsOf(out *Output) []string {
	var lines []string
	for g := 0; g < out.Groups; g++ {
		var b strings.Builder
		for _, k := range out.Keys {
			b.WriteString(k.Format(g) + "|")
		}
		for _, a := range out.Aggs {
			b.WriteString(a.Format(g) + "|")
		}
		lines = append(lines, b.String())
	}
	sort.Strings(lines)
	return lines
}

// TestPreAggAgrees: radix with pre-aggregation (windows so small that
// tables flush often, the default, and off), on one and several threads,
// gives naive's answer for every aggregate that can be split, over keys
// that repeat in runs, at random, and only after a stretch of unique keys
// (which turns folding off for a while).
func TestPreAggAgrees(t *testing.T) {
	const rows = 20000
	orders := []struct {
		name string
		key  func(i int) int
		// check looks at what pre-aggregation did with a window of 64.
		check func(t *testing.T, st PreAggStats)
	}{
		{"runs", func(i int) int { return i / 7 % 500 }, func(t *testing.T, st PreAggStats) {
			if st.Partial*4 > st.Rows || st.Skipped != 0 {
				t.Errorf("runs of 7: %+v, want a quarter of the rows or fewer passed on and none skipped", st)
			}
		}},
		{"random", func(i int) int { return int(rand.New(rand.NewPCG(uint64(i), 9)).IntN(3000)) }, nil},
		{"unique then repeating", func(i int) int {
			if i < 8000 {
				return 100000 + i
			}
			return i % 40
		}, func(t *testing.T, st PreAggStats) {
			if st.Skipped == 0 || st.Partial == 0 || st.Partial*2 > st.Rows {
				t.Errorf("unique keys first: %+v, want rows skipped and the rest folded", st)
			}
		}},
	}
	for _, o := range orders {
		in := newPreAggInput(rows, o.key)
		keyTypes := []vec.Type{vec.Int64, vec.String}
		if !decomposable(in.specs) {
			t.Fatal("the test's aggregates should all be decomposable")
		}
		ref, err := Aggregate(context.Background(), keyTypes, in.specs, Config{Strategy: Naive}, in.source(1000))
		if err != nil {
			t.Fatal(err)
		}
		want := rowsOf(ref)
		for _, window := range []int{8, 64, 0, -1} {
			for _, threads := range []int{1, 3} {
				for _, bits := range []int{0, 4} {
					name := fmt.Sprintf("%s/window=%d/threads=%d/bits=%d", o.name, window, threads, bits)
					cfg := Config{Strategy: Radix, Threads: threads, RadixBits: bits, PreAggGroups: window, RowsHint: rows}
					out, err := Aggregate(context.Background(), keyTypes, in.specs, cfg, in.source(1000))
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					got := rowsOf(out)
					if len(got) != len(want) {
						t.Fatalf("%s: %d groups, want %d", name, len(got), len(want))
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%s: group %d\n got %s\nwant %s", name, i, got[i], want[i])
						}
					}
					st := out.PreAgg
					switch {
					case window < 0 && st.Window != 0:
						t.Errorf("%s: pre-aggregation ran though turned off: %+v", name, st)
					case window >= 0 && st.Rows+st.Skipped != rows:
						t.Errorf("%s: %d rows folded and %d skipped, want %d in all", name, st.Rows, st.Skipped, rows)
					}
					if window == 64 && threads == 1 && o.check != nil {
						o.check(t, st)
					}
				}
			}
		}
	}
}

// TestPreAggNotDecomposable: count(DISTINCT x) and sum(DISTINCT x) cannot
// be split into partial states, so radix scatters their rows as they are.
func TestPreAggNotDecomposable(t *testing.T) {
	in := newPreAggInput(5000, func(i int) int { return i % 50 })
	for _, sp := range []Spec{{Kind: CountDistinct, In: vec.Int64}, {Kind: Sum, In: vec.Int64, Distinct: true}} {
		specs := []Spec{{Kind: CountStar}, sp}
		args := preAggInput{keys: in.keys, args: []*vec.Vector{nil, in.args[1]}, specs: specs}
		cfg := Config{Strategy: Radix, Threads: 1, RadixBits: 2}
		out, err := Aggregate(context.Background(), []vec.Type{vec.Int64, vec.String}, specs, cfg, args.source(700))
		if err != nil {
			t.Fatal(err)
		}
		if out.PreAgg.Window != 0 {
			t.Errorf("%v: pre-aggregation ran: %+v", sp.Kind, out.PreAgg)
		}
		ref, err := Aggregate(context.Background(), []vec.Type{vec.Int64, vec.String}, specs, Config{Strategy: Naive}, args.source(700))
		if err != nil {
			t.Fatal(err)
		}
		if g, w := strings.Join(rowsOf(out), "\n"), strings.Join(rowsOf(ref), "\n"); g != w {
			t.Errorf("%v: radix and naive differ", sp.Kind)
		}
	}
}

// TestPreAggReleases: a worker's window table and its partitions of
// partial groups charge the budget while they are held, and give back all
// they charged; a limit the partitions do not fit in fails with
// ErrMemoryLimit instead of growing past it.
func TestPreAggReleases(t *testing.T) {
	in := newPreAggInput(30000, func(i int) int { return i / 5 % 4000 })
	keyTypes := []vec.Type{vec.Int64, vec.String}
	for _, window := range []int{64, DefaultPreAggGroups} {
		b := &Budget{}
		cfg := Config{Budget: b, Hasher: NewHasher()}
		part := partialScatterer(3, keyTypes, in.specs, 0, nil)
		part.useBudget(b, 0)
		pa, err := newPreAgg(keyTypes, in.specs, window, part, 30000, cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		src := in.source(4096)
		for {
			m, ok, err := src(0)
			if err != nil || !ok {
				break
			}
			if rest, _, err := pa.fold(m); err != nil || rest.N != 0 {
				t.Fatalf("window %d: fold left %d rows: %v", window, rest.N, err)
			}
		}
		if err := pa.flush(); err != nil {
			t.Fatal(err)
		}
		if pa.stats.Partial == 0 || part.bytes == 0 || b.Used() <= part.bytes {
			t.Fatalf("window %d: %+v, partitions %d bytes, budget %d: nothing charged", window, pa.stats, part.bytes, b.Used())
		}
		b.Grow(-part.bytes)
		pa.release(b)
		if b.Used() != 0 {
			t.Errorf("window %d: %d bytes still charged after release", window, b.Used())
		}
	}
	b := &Budget{Limit: 256 << 10}
	cfg := Config{Strategy: Radix, Threads: 1, RadixBits: 3, Budget: b}
	_, err := Aggregate(context.Background(), keyTypes, in.specs, cfg, in.source(4096))
	if !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("under a 256 KiB limit: %v, want ErrMemoryLimit", err)
	}
}
