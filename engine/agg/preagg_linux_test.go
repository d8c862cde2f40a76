package agg

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"cachebook/engine/vec"
)

// TestPreAggFreshMemory: windows that keep about 63% of their rows pass
// the bound for partitions written into fresh memory (70%) but not the one
// for memory the pool kept (50%). With huge-page arenas and an empty pool,
// every window is judged as fresh and folding never pauses; run again on
// the same pool, which now keeps the first run's mappings, folding pauses
// until the partitions outgrow them; on Go's heap, which does not say,
// folding pauses as before. Every run gives naive's answer.
func TestPreAggFreshMemory(t *testing.T) {
	const rows, window = 200000, 2048
	// Random keys from 2048 values: a window of 2048 rows holds about
	// 2048·(1-1/e) ≈ 1295 of them.
	in := newPreAggInput(rows, func(i int) int { return int(rand.New(rand.NewPCG(uint64(i), 3)).IntN(2048)) })
	keyTypes := []vec.Type{vec.Int64, vec.String}
	ref, err := Aggregate(context.Background(), keyTypes, in.specs, Config{Strategy: Naive}, in.source(4096))
	if err != nil {
		t.Fatal(err)
	}
	want := rowsOf(ref)
	pool := NewPool(1<<30, nil)
	defer pool.Drain()
	run := func(name string, huge bool) PreAggStats {
		t.Helper()
		cfg := Config{Strategy: Radix, Threads: 1, RadixBits: 4, PreAggGroups: window, RowsHint: rows, HugePages: huge, Pool: pool}
		out, err := Aggregate(context.Background(), keyTypes, in.specs, cfg, in.source(4096))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := rowsOf(out); !slices.Equal(got, want) {
			t.Fatalf("%s: %d groups differ from naive's %d", name, len(got), len(want))
		}
		return out.PreAgg
	}
	if st := run("fresh pool", true); st.Fresh == 0 || st.Skipped != 0 || st.Rows != rows {
		t.Errorf("fresh pool: %+v, want every window judged as fresh and every row folded", st)
	}
	if pool.kept() == 0 {
		t.Fatal("the pool kept none of the first run's mappings")
	}
	if st := run("kept mappings", true); st.Skipped == 0 {
		t.Errorf("kept mappings: %+v, want folding paused while the partitions reuse them", st)
	}
	if st := run("Go heap", false); st.Fresh != 0 || st.Skipped == 0 {
		t.Errorf("Go heap: %+v, want no window judged as fresh and folding paused", st)
	}
}
