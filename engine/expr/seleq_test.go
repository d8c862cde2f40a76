package expr

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelEqDense checks the blocked equality loop against a plain one
// over lengths around its block and switch points and match densities
// from none to all.
func TestSelEqDense(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 1023, 1024, 1025, 1031, 5000, 16384} {
		for _, every := range []int{0, 1000, 8, 2, 1} {
			x := make([]int64, n)
			f := make([]float64, n)
			for i := range x {
				x[i], f[i] = r.Int64N(1000)+100, float64(r.IntN(1000)+100)
				if i%7 == 3 {
					f[i] = math.NaN()
				}
				if every > 0 && r.IntN(every) == 0 {
					x[i], f[i] = 42, 42
				}
			}
			var want, wantF []int32
			for i := range x {
				if x[i] == 42 {
					want = append(want, int32(i))
				}
				if f[i] == 42 {
					wantF = append(wantF, int32(i))
				}
			}
			if got := selEqDense(x, 42, make([]int32, n)); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Errorf("int64, %d rows, 1 in %d: got %d rows, want %d", n, every, len(got), len(want))
			}
			if got := selEqDense(f, 42, make([]int32, n)); !slices.Equal(got, wantF) && len(got)+len(wantF) > 0 {
				t.Errorf("float64, %d rows, 1 in %d: got %d rows, want %d", n, every, len(got), len(wantF))
			}
		}
	}
}
