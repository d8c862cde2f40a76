package experiment

import (
	"context"
	"fmt"
	"maps"
	"math"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"cachebook/kernel/internal/freshmem"
)

func TestCounterBlockLayout(t *testing.T) {
	for _, lay := range counterLayouts {
		words, first, step := counterBlock(5, lay.stride)
		if addr := uintptr(unsafe.Pointer(&words[first])); addr%128 != 0 {
			t.Errorf("%s: first counter at %#x, not 128-byte aligned", lay.name, addr)
		}
		if step*8 != lay.stride {
			t.Errorf("%s: step %d words, want %d bytes", lay.name, step, lay.stride)
		}
		if last := first + 4*step; last >= len(words) {
			t.Errorf("%s: counter 4 at word %d outside %d words", lay.name, last, len(words))
		}
	}
}

func TestCheckCountersCatchesErrors(t *testing.T) {
	words, first, step := counterBlock(3, 64)
	done := []int{7, 9, 7}
	for w, d := range done {
		words[first+w*step] = uint64(d)
	}
	if err := checkCounters(words, first, step, done); err != nil {
		t.Fatalf("correct counters rejected: %v", err)
	}
	words[first+step] = 8
	if err := checkCounters(words, first, step, done); err == nil {
		t.Error("a short counter was not caught")
	}
	words[first+step] = 9
	words[first+1] = 1 // padding
	if err := checkCounters(words, first, step, done); err == nil {
		t.Error("a write into the padding was not caught")
	}
}

func TestFalseSharingCounts(t *testing.T) {
	r, err := runSpec(t, "false-sharing", map[string]string{"threads": "3", "iterations": "70000", "reps": "2"}, nil)
	// Counters are checked inside the run: each must equal 70000.
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	d := r.Data.(*FalseSharingData)
	if len(d.Rows) != 6 {
		t.Fatalf("%d rows, want 3 layouts x 2 modes", len(d.Rows))
	}
	for _, row := range d.Rows {
		if row.OpsPerS <= 0 || row.Slowdown <= 0 {
			t.Errorf("row %+v has no measurement", row)
		}
		if row.Layout == "padded-128" && row.Slowdown != 1 {
			t.Errorf("padded-128 is its own baseline, slowdown %v", row.Slowdown)
		}
	}
	if r.Params["threads"] != "3" || r.Params["modes"] != "atomic,plain" {
		t.Errorf("effective params %v", r.Params)
	}
}

func TestFalseSharingTimed(t *testing.T) {
	r, err := runSpec(t, "false-sharing", map[string]string{"threads": "2", "duration": "2ms", "reps": "1", "modes": "atomic"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Data.(*FalseSharingData)
	if d.DurationNS != 2e6 || d.Iterations != 0 {
		t.Errorf("data %+v", d)
	}
	for _, row := range d.Rows {
		// At least one chunk per thread, and the run took about 2ms. The
		// operation count is recovered from a rate, so it is rounded: exactly
		// two chunks can come back as 32767.99999.
		if math.Round(row.OpsPerS*float64(row.WallNS)/1e9) < 2*chunkIncrements || row.WallNS < 2e6 {
			t.Errorf("row %+v", row)
		}
		if row.Overlap < 0 || row.Overlap > 1 {
			t.Errorf("overlap %v out of range", row.Overlap)
		}
	}
}

func TestSharedCaches(t *testing.T) {
	init := map[uint64]uint64{1: 2, 2: 4, 3: 6}
	for _, v := range cacheVariants {
		t.Run(v, func(t *testing.T) {
			c := newSharedCache(v, init, 4, 4)
			if got, ok := c.get(0, 2); !ok || got != 4 {
				t.Errorf("get(2) = %d, %v", got, ok)
			}
			if _, ok := c.get(0, 9); ok {
				t.Error("get(9) found a missing key")
			}
			if c.update(0, 2, 4) {
				t.Error("a redundant update wrote")
			}
			if !c.update(0, 2, 5) {
				t.Error("a real update did not write")
			}
			if got, _ := c.get(0, 2); got != 5 {
				t.Errorf("after update get(2) = %d", got)
			}
			if !c.update(0, 7, 14) {
				t.Error("inserting a new key did not write")
			}
			want := map[uint64]uint64{1: 2, 2: 5, 3: 6, 7: 14}
			if got := c.snapshot(); !maps.Equal(got, want) {
				t.Errorf("snapshot %v, want %v", got, want)
			}
			if init[2] != 4 {
				t.Error("the cache modified its initial map")
			}
			// Concurrent readers and writers (meaningful under -race).
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for i := range 200 {
						k := uint64(i % 8)
						if i%5 == w {
							c.update(w, k, uint64(w))
						} else {
							c.get(w, k)
						}
					}
				})
			}
			wg.Wait()
			if n := len(c.snapshot()); v != "per-thread" && n != 8 {
				t.Errorf("after the concurrent phase the cache has %d keys, want 8", n)
			}
		})
	}
}

func TestPerThreadCacheIsPrivate(t *testing.T) {
	c := newSharedCache("per-thread", map[uint64]uint64{1: 2}, 1, 2)
	if !c.update(1, 1, 3) {
		t.Fatal("update did not write")
	}
	if v, _ := c.get(0, 1); v != 2 {
		t.Errorf("worker 0 sees %d, want its own 2", v)
	}
	if v, _ := c.get(1, 1); v != 3 {
		t.Errorf("worker 1 sees %d, want 3", v)
	}
}

func TestLockContentionRun(t *testing.T) {
	r, err := runSpec(t, "lock-contention", map[string]string{"threads": "3", "ops": "4000", "keys": "64", "writes": "0.05"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	d := r.Data.(*LockContentionData)
	if len(d.Rows) != 5*3 { // variants x thread steps 1, 2, 3
		t.Fatalf("%d rows, want 15", len(d.Rows))
	}
	for _, row := range d.Rows {
		total := int64(row.Threads) * 4000
		// About 5% of operations update; allow a wide margin.
		if row.Updates < total/50 || row.Updates > total/10 {
			t.Errorf("%s/%d: %d updates of %d ops, want about 5%%", row.Variant, row.Threads, row.Updates, total)
		}
		if row.RealWrite > row.Updates || row.RealWrite == 0 {
			t.Errorf("%s/%d: %d real writes of %d updates", row.Variant, row.Threads, row.RealWrite, row.Updates)
		}
	}
}

// referenceCounts counts keyOfRow directly: what any merge must produce.
func referenceCounts(rows int, groups uint64) map[uint64]uint64 {
	m := make(map[uint64]uint64)
	for i := range uint64(rows) {
		m[keyOfRow(i, groups)]++
	}
	return m
}

func TestMergesMatchReference(t *testing.T) {
	ctx := context.Background()
	const rows, groups = 20000, 3000
	ref := referenceCounts(rows, groups)
	for _, n := range []int{1, 2, 3, 5} {
		serial, row, err := serialMerge(ctx, nil, rows, groups, n)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(serial, ref) {
			t.Errorf("%d threads: serial merge differs from the reference", n)
		}
		if row.Groups != len(ref) || row.Partial < int64(len(ref)) {
			t.Errorf("%d threads: serial row %+v", n, row)
		}
		for _, buckets := range []int{2, 256} {
			two, row, err := twoLevelMerge(ctx, nil, rows, groups, n, buckets)
			if err != nil {
				t.Fatal(err)
			}
			if len(two) != buckets {
				t.Fatalf("%d buckets returned, want %d", len(two), buckets)
			}
			flat := make(map[uint64]uint64)
			for _, m := range two {
				maps.Copy(flat, m)
			}
			if !maps.Equal(flat, ref) {
				t.Errorf("%d threads, %d buckets: two-level merge differs from the reference", n, buckets)
			}
			if row.Groups != len(ref) {
				t.Errorf("two-level row %+v", row)
			}
		}
	}
}

func TestCheckMergedCatchesErrors(t *testing.T) {
	ctx := context.Background()
	serial, _, _ := serialMerge(ctx, nil, 1000, 100, 2)
	two, _, _ := twoLevelMerge(ctx, nil, 1000, 100, 2, 4)
	if err := checkMerged(serial, two, 62, 1000); err != nil {
		t.Fatalf("correct merge rejected: %v", err)
	}
	for k := range two[0] {
		two[0][k]++
		break
	}
	if err := checkMerged(serial, two, 62, 1000); err == nil {
		t.Error("a wrong count was not caught")
	}
}

func TestParallelMergeRun(t *testing.T) {
	r, err := runSpec(t, "parallel-merge", map[string]string{"threads": "4", "rows": "30000", "groups": "5000", "buckets": "16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	d := r.Data.(*ParallelMergeData)
	if len(d.Runs) != 3*2 {
		t.Fatalf("%d runs, want thread steps 1, 2, 4 x 2 strategies", len(d.Runs))
	}
	// More threads, more partial entries for the merge to fold together.
	if !(d.Runs[0].Partial < d.Runs[2].Partial && d.Runs[2].Partial < d.Runs[4].Partial) {
		t.Errorf("partial entries do not grow with threads: %d, %d, %d", d.Runs[0].Partial, d.Runs[2].Partial, d.Runs[4].Partial)
	}
}

func TestBufPoolReuses(t *testing.T) {
	p := &bufPool{size: 1 << 12}
	a := p.get()
	a[0] = 42
	p.put(a)
	b := p.get()
	if &a[0] != &b[0] {
		t.Fatal("the pool did not hand back the freed buffer")
	}
	if b[0] != 42 {
		t.Error("the pool cleared a reused buffer")
	}
	c := p.get() // list empty: a new buffer
	p.put(b)
	p.put(c)
	for range 10 {
		p.put(p.get())
	}
	if p.made != 2 || p.reuse != 11 {
		t.Errorf("made %d, reused %d; want 2, 11", p.made, p.reuse)
	}
}

func TestFill(t *testing.T) {
	src := fillSource()
	b := make([]byte, 3*len(src)+100)
	n := 2*len(src) + 7
	fill(b, n, src)
	for i, v := range b {
		want := byte(0)
		if i < n {
			want = src[i%len(src)]
		}
		if v != want {
			t.Fatalf("byte %d is %d, want %d", i, v, want)
		}
	}
}

func TestZeroingRun(t *testing.T) {
	r, err := runSpec(t, "zeroing", map[string]string{"size": "64KiB", "allocs": "5", "live": "2", "threads": "2", "touch": "0.25"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	d := r.Data.(*ZeroingData)
	want := 4 * 2
	if ok, _ := freshmem.Supported(); !ok {
		want = 3 * 2
		if len(d.Skipped) != 1 {
			t.Errorf("skipped %v, want the mmap variant", d.Skipped)
		}
	}
	if len(d.Rows) != want {
		t.Fatalf("%d rows, want %d", len(d.Rows), want)
	}
	if d.Touched != 16<<10 {
		t.Errorf("touched %d bytes, want 16KiB", d.Touched)
	}
	for _, row := range d.Rows {
		switch row.Variant {
		case "pool", "pool-clear":
			// live buffers per worker, reused for every allocation.
			if row.NewBuffers != 2*int64(row.Threads) {
				t.Errorf("%s/%d threads allocated %d buffers, want two per thread", row.Variant, row.Threads, row.NewBuffers)
			}
		case "mmap":
			if row.ZeroedPerOp != 16<<10 {
				t.Errorf("mmap zeroes %d bytes per op, want the touched 16KiB", row.ZeroedPerOp)
			}
			if runtime.GOOS == "linux" && row.FaultsPerOp < 4 {
				t.Errorf("mmap took %.1f faults per op, want at least the 4 touched pages", row.FaultsPerOp)
			}
		}
	}
}

func ExampleSumQuery() {
	fmt.Println(SumQuery(3))
	// Output: SELECT SUM(ResolutionWidth), SUM(ResolutionWidth + 1), SUM(ResolutionWidth + 2) FROM hits
}
