package agg

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"

	"cachebook/engine/vec"
)

// TestGlobalWorkers checks the aggregate without keys against values
// computed here, on one worker and on several (each folding its morsels
// into partial states, merged at the end), with NULLs in some morsels
// only and sums past 64 bits in between.
func TestGlobalWorkers(t *testing.T) {
	const rows, morsel = 20000, 1500
	ints := vec.NewVector(vec.Int64, rows)
	floats := vec.NewVector(vec.Float64, rows)
	strs := vec.NewVector(vec.String, rows)
	var cnt, sum, fsum int64
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	smin, smax := "", ""
	for i := 0; i < rows; i++ {
		if i/morsel == 3 && i%7 == 0 {
			ints.AppendNull()
			floats.AppendNull()
			strs.AppendNull()
			continue
		}
		// Large values of both signs: the running sum passes 64 bits.
		v := int64(i%101-50) << 56
		if i == 12345 {
			v = -7
		}
		ints.AppendInt(v)
		f := float64(i % 1000)
		floats.AppendFloat(f)
		s := string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		strs.AppendStr([]byte(s))
		cnt++
		sum += v
		fsum += int64(f)
		lo, hi = min(lo, v), max(hi, v)
		if smin == "" || s < smin {
			smin = s
		}
		smax = max(smax, s)
	}
	specs := []Spec{{Kind: CountStar}, {Kind: Count, In: vec.Int64}, {Kind: Sum, In: vec.Int64},
		{Kind: Min, In: vec.Int64}, {Kind: Max, In: vec.Int64}, {Kind: Sum, In: vec.Float64},
		{Kind: Min, In: vec.String}, {Kind: Max, In: vec.String}, {Kind: Avg, In: vec.Float64}}
	cols := []*vec.Vector{nil, ints, ints, ints, ints, floats, strs, strs, floats}
	for _, threads := range []int{1, 2, 3} {
		var mu sync.Mutex
		off := 0
		src := func(int) (Input, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if off >= rows {
				return Input{}, false, nil
			}
			end := min(off+morsel, rows)
			in := Input{N: end - off}
			for _, c := range cols {
				if c == nil {
					in.Args = append(in.Args, nil)
					continue
				}
				s := c.Slice(off, end)
				if s.Valid != nil && !hasFalse(s.Valid) {
					s.Valid = nil
				}
				in.Args = append(in.Args, s)
			}
			off = end
			return in, true, nil
		}
		cfg := Config{Threads: threads}
		out, err := Aggregate(context.Background(), nil, specs, cfg, src)
		if err != nil {
			t.Fatalf("threads %d: %v", threads, err)
		}
		a := out.Aggs
		got := []any{a[0].I64[0], a[1].I64[0], a[2].I64[0], a[3].I64[0], a[4].I64[0], a[5].F64[0],
			string(a[6].Str(0)) == smin, string(a[7].Str(0)) == smax, a[8].F64[0]}
		want := []any{int64(rows), cnt, sum, lo, hi, float64(fsum), true, true, float64(fsum) / float64(cnt)}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("threads %d: aggregate %d (%v) = %v, want %v", threads, i, specs[i].Kind, got[i], want[i])
			}
		}
	}
}

func hasFalse(v []bool) bool {
	for _, b := range v {
		if !b {
			return true
		}
	}
	return false
}

// TestGlobalWorkersDistinct runs a DISTINCT aggregate on every worker: its
// set of values seen merges (TestDistinctPairs checks the result).
func TestGlobalWorkersDistinct(t *testing.T) {
	for _, tc := range []struct {
		specs   []Spec
		threads int
		want    int
	}{
		{[]Spec{{Kind: Sum, In: vec.Int64}}, 4, 4},
		{[]Spec{{Kind: Sum, In: vec.Int64}, {Kind: CountDistinct, In: vec.Int64}}, 4, 4},
		{[]Spec{{Kind: Avg, In: vec.Int64, Distinct: true}}, 2, 2},
		{[]Spec{{Kind: CountStar}}, 0, 1},
	} {
		if got := GlobalWorkers(tc.specs, tc.threads); got != tc.want {
			t.Errorf("GlobalWorkers(%v, %d) = %d, want %d", tc.specs, tc.threads, got, tc.want)
		}
	}
}

// sum128Ref adds vs to (lo, hi) with a 128-bit add per value.
func sum128Ref(lo uint64, hi int64, vs []int64) (uint64, int64) {
	for _, v := range vs {
		var c uint64
		lo, c = bits.Add64(lo, uint64(v), 0)
		hi += int64(c) + v>>63
	}
	return lo, hi
}

// TestAddSum128 checks the split-word sum against a 128-bit add per
// value, at the extremes and over lengths that end the unrolled loop at
// every remainder.
func TestAddSum128(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]int64, 5003)
	for i := range random {
		random[i] = int64(rng.Uint64())
	}
	extremes := []int64{math.MinInt64, math.MaxInt64, -1, 0, 1, math.MinInt64, math.MinInt64, math.MaxInt64, 1 << 32, -1 << 32, 1<<32 - 1}
	many := make([]int64, 4099)
	for i := range many {
		many[i] = math.MinInt64
	}
	tests := []struct {
		name string
		vs   []int64
	}{
		{"empty", nil},
		{"extremes", extremes},
		{"random", random},
		{"all the most negative", many},
	}
	for n := 1; n <= 9; n++ {
		tests = append(tests, struct {
			name string
			vs   []int64
		}{fmt.Sprintf("%d values", n), extremes[:n]})
	}
	for _, tc := range tests {
		for _, start := range []struct {
			lo uint64
			hi int64
		}{{0, 0}, {math.MaxUint64, -1}, {12345, 1 << 40}} {
			wl, wh := sum128Ref(start.lo, start.hi, tc.vs)
			gl, gh := addSum128(start.lo, start.hi, tc.vs)
			if gl != wl || gh != wh {
				t.Errorf("%s from (%d, %d): got (%d, %d), want (%d, %d)", tc.name, start.lo, start.hi, gl, gh, wl, wh)
			}
		}
	}
}

// TestAddSumNarrow checks the one-add sum of 32-bit values against a
// 128-bit add per value, at the extremes of INTEGER, over lengths that
// end the unrolled loop at every remainder, from starts that carry.
func TestAddSumNarrow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]int64, 5003)
	for i := range random {
		random[i] = int64(int32(rng.Uint32()))
	}
	lows, highs := make([]int64, 4099), make([]int64, 4099)
	for i := range lows {
		lows[i], highs[i] = math.MinInt32, math.MaxInt32
	}
	extremes := []int64{math.MinInt32, math.MaxInt32, -1, 0, 1, math.MinInt32, math.MaxInt32, math.MinInt16, math.MaxInt16}
	tests := map[string][]int64{"empty": nil, "random": random, "all the lowest": lows, "all the highest": highs}
	for n := 1; n <= len(extremes); n++ {
		tests[fmt.Sprintf("%d extremes", n)] = extremes[:n]
	}
	for name, vs := range tests {
		for _, start := range []struct {
			lo uint64
			hi int64
		}{{0, 0}, {math.MaxUint64, -1}, {math.MaxUint64 - 5, 7}, {3, 1 << 40}} {
			wl, wh := sum128Ref(start.lo, start.hi, vs)
			if gl, gh := addSumNarrow(start.lo, start.hi, vs); gl != wl || gh != wh {
				t.Errorf("%s from (%d, %d): got (%d, %d), want (%d, %d)", name, start.lo, start.hi, gl, gh, wl, wh)
			}
		}
	}
}
