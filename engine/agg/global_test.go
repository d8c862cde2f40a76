package agg

import (
	"context"
	"math"
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
