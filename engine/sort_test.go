package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/vec"
)

// TestSortIndices checks the run-and-merge sort and the top-k heap against
// a plain sort, and that a cancelled context stops them.
func TestSortIndices(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 100, sortRun, sortRun + 1, 3*sortRun + 17} {
		v := &vec.Vector{Type: vec.Int64, Len: n, I64: make([]int64, n)}
		w := &vec.Vector{Type: vec.Int64, Len: n, I64: make([]int64, n), Valid: make([]bool, n)}
		for i := range v.I64 {
			v.I64[i] = r.Int64N(1000)
			w.I64[i] = r.Int64N(50)
			w.Valid[i] = i%7 != 0
		}
		// The heap's shortcut on a first key of non-NULL integers, in
		// either direction and with a second key to break its ties; and
		// a first key with NULLs, which takes the general comparison.
		for _, keys := range [][]sortKey{
			{{v: v, desc: true}},
			{{v: v}},
			{{v: v}, {v: w, desc: true}},
			{{v: v, desc: true}, {v: w}},
			{{v: w}, {v: v, desc: true}},
		} {
			checkSortIndices(t, keys, n)
		}
	}
}

func checkSortIndices(t *testing.T, keys []sortKey, n int) {
	t.Helper()
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

// batches is an operator that returns its batches one by one.
type batches struct {
	opBase
	bs []*vec.Batch
}

func (b *batches) detail() []string { return nil }

func (b *batches) next(x *execCtx, w int) (*vec.Batch, error) {
	if len(b.bs) == 0 {
		return nil, nil
	}
	n := b.bs[0]
	b.bs = b.bs[1:]
	return n, nil
}

// TestTopNOverParts checks that a top-N fed large batches (an
// aggregation's parts), which it selects from one by one, dropping the
// rows that sort after the keep-th it holds as they come, returns what a
// full sort of all of them would, ties broken by arrival.
func TestTopNOverParts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sizes := []int{20000, 7, 30000, 5000, 1}
	var all []*vec.Batch
	total := 0
	for p, n := range sizes {
		k := &vec.Vector{Type: vec.Int64, Len: n}
		c := &vec.Vector{Type: vec.Int64, Len: n}
		for i := 0; i < n; i++ {
			k.I64 = append(k.I64, r.Int64N(30)) // many ties
			c.I64 = append(c.I64, int64(p*100000+i))
		}
		all = append(all, &vec.Batch{Vecs: []*vec.Vector{k, c}, Len: n})
		total += n
	}
	// The expected order: the rows concatenated, sorted by the key, ties
	// in arrival order (the second column numbers rows in arrival order).
	cat := []*vec.Vector{emptyVec(vec.Int64), emptyVec(vec.Int64)}
	for _, b := range all {
		cat[0].AppendVector(b.Vecs[0])
		cat[1].AppendVector(b.Vecs[1])
	}
	for _, desc := range []bool{false, true} {
		for _, keep := range []int64{1, 10, 3000} {
			want, err := sortIndices(context.Background(), []sortKey{{v: cat[0], desc: desc}}, total, int(keep))
			if err != nil {
				t.Fatal(err)
			}
			s := &sortOp{
				opBase: opBase{label: "TOP_N", children: []operator{&batches{bs: slices.Clone(all)}}},
				order:  []orderKey{{col: 0, desc: desc}},
				names:  []string{"k", "c"},
				cols:   []vec.Column{{Name: "k", Type: vec.Int64}, {Name: "c", Type: vec.Int64}},
				keep:   keep,
			}
			x := &execCtx{ctx: context.Background(), budget: &agg.Budget{}}
			got, err := s.next(x, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.Len != len(want) {
				t.Fatalf("desc=%v keep=%d: %d rows, want %d", desc, keep, got.Len, len(want))
			}
			for i, j := range want {
				if got.Vecs[1].I64[i] != cat[1].I64[j] {
					t.Fatalf("desc=%v keep=%d: row %d is %d, want %d", desc, keep, i, got.Vecs[1].I64[i], cat[1].I64[j])
				}
			}
			// Once it held keep rows, the top-N dropped the rows of
			// later parts whose key sorts after its keep-th as they
			// came (the loop above checks that none it needed went).
			if keep <= 10 && (s.cut == nil || s.cut.cut.Load() == 0) {
				t.Errorf("desc=%v keep=%d: no input row was dropped before the sort", desc, keep)
			}
		}
	}
}
