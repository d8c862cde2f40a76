package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"cachebook/engine/vec"
)

// TestSortIndices checks the run-and-merge sort and the top-k heap against
// a plain sort, and that a cancelled context stops them.
func TestSortIndices(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 100, sortRun, sortRun + 1, 3*sortRun + 17} {
		v := &vec.Vector{Type: vec.Int64, Len: n, I64: make([]int64, n)}
		for i := range v.I64 {
			v.I64[i] = r.Int64N(1000)
		}
		keys := []sortKey{{v: v, desc: true}}
		want := make([]int32, n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortFunc(want, func(a, b int32) int { return compareRows(keys, a, b) })
		for _, k := range []int{-1, 0, 5, n / 2, n} {
			got, err := sortIndices(context.Background(), keys, n, k)
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if k >= 0 && k < n {
				w = want[:k]
			}
			if !slices.Equal(got, w) {
				t.Errorf("n=%d k=%d: wrong order", n, k)
			}
		}
		if n > sortRun {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			for _, k := range []int{-1, 5} {
				if _, err := sortIndices(ctx, keys, n, k); !errors.Is(err, context.Canceled) {
					t.Errorf("n=%d k=%d: cancelled sort returned %v", n, k, err)
				}
			}
		}
	}
}
