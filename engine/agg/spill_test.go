package agg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"cachebook/engine/spill"
	"cachebook/engine/vec"
)

// TestSpillSplitsAgain: a radix aggregation of one partition (radix_bits
// 0) whose table is far beyond its budget spills it, splits the spill
// partition on further hash bits, and splits the parts, still too large,
// again on the next, until each fits; every group comes out once with its
// count, and every file is removed once its part is aggregated.
func TestSpillSplitsAgain(t *testing.T) {
	const rows, morsel = 1 << 20, 1 << 14
	for _, threads := range []int{1, 2} {
		dir := t.TempDir()
		var space *spill.Space
		// A table of 2^20 groups takes ~40 MiB, a sixteenth of it
		// ~2.5 MiB: parts of a 256th fit in 1 MiB.
		cfg := Config{Strategy: Radix, RadixBits: 0, Threads: threads, Budget: &Budget{Limit: 1 << 20}, SpillAt: 3 << 17, PreAggGroups: -1,
			Spill: func() (*spill.Space, error) {
				var err error
				space, err = spill.Open(dir, 0)
				return space, err
			}}
		ag, err := New([]vec.Type{vec.Int64}, []Spec{{Kind: CountStar}}, Generic, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for w := range threads {
			for lo := w * morsel; lo < rows; lo += threads * morsel {
				k := vec.NewVector(vec.Int64, morsel)
				for i := range morsel {
					k.AppendInt(int64(lo + i))
				}
				if err := ag.Sink(w, Input{Keys: []*vec.Vector{k}, Args: []*vec.Vector{nil}, N: morsel}); err != nil {
					t.Fatalf("threads %d: %v", threads, err)
				}
			}
			if err := ag.Flush(w); err != nil {
				t.Fatal(err)
			}
		}
		if err := ag.Finalize(context.Background()); err != nil {
			t.Fatal(err)
		}
		groups := countsOnce(t, ag, cfg.Budget, rows, 1, fmt.Sprintf("threads %d: ", threads))
		st := ag.(*radix).SpillStats()
		ag.Close()
		if groups != rows {
			t.Errorf("threads %d: %d groups, want %d", threads, groups, rows)
		}
		if st.Depth < 2 {
			t.Errorf("threads %d: split %d levels deep, want at least 2 (%+v)", threads, st.Depth, st)
		}
		// Each part's files go once it is aggregated (the statement's
		// end removes the directory).
		if left, err := os.ReadDir(space.Dir()); err != nil || len(left) > 0 {
			t.Errorf("threads %d: %d files left after the last part (%v)", threads, len(left), err)
		}
		if err := space.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("threads %d: %+v", threads, st)
	}
}

// TestNaiveOverLimit: a naive table (generic or the tuned count loop)
// that passes its budget while it aggregates fails with an error that says
// naive cannot spill and what can.
func TestNaiveOverLimit(t *testing.T) {
	const rows = 1 << 16
	k := vec.NewVector(vec.Int64, rows)
	for i := range rows {
		k.AppendInt(int64(i))
	}
	for _, loop := range []Loop{Generic, CountLoop} {
		ag, err := New([]vec.Type{vec.Int64}, []Spec{{Kind: CountStar}}, loop, Config{Budget: &Budget{Limit: 256 << 10}})
		if err != nil {
			t.Fatal(err)
		}
		err = ag.Sink(0, Input{Keys: []*vec.Vector{k}, Args: []*vec.Vector{nil}, N: rows})
		ag.Close()
		if !errors.Is(err, ErrMemoryLimit) || !strings.Contains(err.Error(), "naive has no partitions to spill") {
			t.Errorf("loop %d: want naive's memory limit error, got %v", loop, err)
		}
	}
}

// TestSpillKeepsWhatFits: a radix aggregation whose partitions pass their
// share of the limit by about a seventh spills only groups of partitions
// (hybrid hashing): the groups that fit stay in memory and are aggregated
// from there with the spilled ones, so that it writes well under what it
// partitioned, and every group comes out once with its count.
func TestSpillKeepsWhatFits(t *testing.T) {
	const rows, keys, morsel = 1 << 22, 1 << 21, 1 << 14
	dir := t.TempDir()
	var space *spill.Space
	cfg := Config{Strategy: Radix, RadixBits: 8, Threads: 1, Budget: &Budget{Limit: 96 << 20}, SpillAt: 56 << 20, SpillGroups: true, PreAggGroups: -1,
		Spill: func() (*spill.Space, error) {
			var err error
			space, err = spill.Open(dir, 0)
			return space, err
		}}
	ag, err := New([]vec.Type{vec.Int64}, []Spec{{Kind: CountStar}}, Generic, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	for lo := 0; lo < rows; lo += morsel {
		k := vec.NewVector(vec.Int64, morsel)
		for i := range morsel {
			k.AppendInt(int64((lo + i) % keys))
		}
		if err := ag.Sink(0, Input{Keys: []*vec.Vector{k}, Args: []*vec.Vector{nil}, N: morsel}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ag.Flush(0); err != nil {
		t.Fatal(err)
	}
	if err := ag.Finalize(context.Background()); err != nil {
		t.Fatal(err)
	}
	groups := countsOnce(t, ag, cfg.Budget, keys, rows/keys, "")
	st := ag.(*radix).SpillStats()
	if groups != keys {
		t.Errorf("%d groups, want %d", groups, keys)
	}
	// Each row took 16 bytes (its hash and key) in the partitions.
	if all := int64(rows) * 16; st.Bytes <= 0 || st.Bytes > all/2 {
		t.Errorf("spilled %d bytes of %d partitioned, want some and at most half (%+v)", st.Bytes, all, st)
	}
	if left, err := os.ReadDir(space.Dir()); err != nil || len(left) > 0 {
		t.Errorf("%d files left after the last partition (%v)", len(left), err)
	}
	t.Logf("%+v", st)
}

// countsOnce hands out ag's groups with worker 0, giving each part's
// bytes back to b, and fails the test (its messages prefixed with what)
// unless every group is an integer key in [0, keys), comes out once and
// counts want rows; it returns the groups.
func countsOnce(t *testing.T, ag Aggregator, b *Budget, keys, want int64, what string) int {
	t.Helper()
	seen := make([]bool, keys)
	groups := 0
	for {
		p, ok, err := ag.Next(context.Background(), 0)
		if err != nil {
			t.Fatalf("%s%v", what, err)
		}
		if !ok {
			return groups
		}
		for i := range p.Groups {
			k, c := p.Keys[0].I64[i], p.Aggs[0].I64[i]
			if k < 0 || k >= keys || seen[k] || c != want {
				t.Fatalf("%sgroup %d (count %d) out of place", what, k, c)
			}
			seen[k] = true
		}
		groups += p.Groups
		b.Grow(-p.Bytes)
	}
}
