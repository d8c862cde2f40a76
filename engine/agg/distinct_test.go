package agg

import (
	"math/rand/v2"
	"testing"

	"cachebook/engine/vec"
)

// TestPairSetPrefetch feeds count(DISTINCT x) batches whose pair set
// grows mid-batch and whose rows straddle the prefetch blocks, with and
// without NULLs, then merges a second worker's state into it, and checks
// every group's count against a map. A probe that took a prefetched slot
// for its own, or lost a pair across a grow, would count wrong.
func TestPairSetPrefetch(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rows, batch  int
		groups, vals int
		nulls        bool
	}{
		{"empty", 0, 1, 1, 1, false},
		{"one row", 1, 1, 1, 1, false},
		{"under a block", prefetchBlock - 1, 64, 3, 10, true},
		{"blocks and a tail", 3*prefetchBlock + 5, 1000, 4, 1 << 20, false},
		{"grows mid-batch", 50_000, 20_000, 7, 1 << 30, true},
		{"all duplicates", 20_000, 4096, 2, 3, false},
		{"all nulls", 5_000, 1024, 5, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Budget{}
			r := rand.New(rand.NewPCG(1, uint64(tc.rows)))
			want := map[[2]int64]bool{}
			states := make([]*State, 2)
			for w := range states {
				s, err := NewState(Spec{Kind: CountDistinct, In: vec.Int64}, nil, b)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Resize(tc.groups); err != nil {
					t.Fatal(err)
				}
				states[w] = s
			}
			for lo := 0; lo < tc.rows; lo += tc.batch {
				n := min(tc.batch, tc.rows-lo)
				in := &vec.Vector{Type: vec.Int64, Len: n, I64: make([]int64, n)}
				if tc.nulls {
					in.Valid = make([]bool, n)
				}
				gids := make([]uint32, n)
				for i := range n {
					gids[i] = uint32(r.IntN(tc.groups))
					in.I64[i] = r.Int64N(int64(tc.vals))
					if tc.nulls {
						in.Valid[i] = tc.name != "all nulls" && r.IntN(4) != 0
						if !in.Valid[i] {
							continue
						}
					}
					want[[2]int64{int64(gids[i]), in.I64[i]}] = true
				}
				if err := states[(lo/tc.batch)%2].Update(gids, in, n); err != nil {
					t.Fatal(err)
				}
			}
			remap := make([]uint32, tc.groups)
			for g := range remap {
				remap[g] = uint32(g)
			}
			if err := states[0].mergePairs(states[1], remap); err != nil {
				t.Fatal(err)
			}
			wantCnt := make([]int64, tc.groups)
			for p := range want {
				wantCnt[p[0]]++
			}
			got, err := states[0].Finalize(tc.groups)
			if err != nil {
				t.Fatal(err)
			}
			for g := range tc.groups {
				if got.I64[g] != wantCnt[g] {
					t.Errorf("group %d: count(DISTINCT) %d, want %d", g, got.I64[g], wantCnt[g])
				}
			}
			for _, s := range states {
				s.release()
			}
			if u := b.Used(); u != 0 {
				t.Errorf("%d bytes still charged after release", u)
			}
		})
	}
}

// BenchmarkPairSet folds rows of 8000 groups and a million values into a
// count(DISTINCT) pair set far larger than the L2 cache.
func BenchmarkPairSet(b *testing.B) {
	const rows, batch = 1 << 22, 2048
	r := rand.New(rand.NewPCG(1, 2))
	gids := make([]uint32, rows)
	in := &vec.Vector{Type: vec.Int64, Len: rows, I64: make([]int64, rows)}
	for i := range rows {
		gids[i], in.I64[i] = uint32(r.IntN(8000)), r.Int64N(1<<21)
	}
	for b.Loop() {
		s, err := NewState(Spec{Kind: CountDistinct, In: vec.Int64}, nil, &Budget{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Resize(8000); err != nil {
			b.Fatal(err)
		}
		for lo := 0; lo < rows; lo += batch {
			if err := s.Update(gids[lo:lo+batch], in.Slice(lo, lo+batch), batch); err != nil {
				b.Fatal(err)
			}
		}
		s.release()
	}
}
