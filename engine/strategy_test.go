package engine

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/spill"
	"cachebook/engine/vec"
)

// TestScaleEstimate extrapolates the distinct keys of a sample's first
// rows to the whole input for the key distributions GROUP BY meets, and
// checks the estimate against the exact count: never far below it (an
// underestimate runs a table beyond the cache naively), and within a
// stated factor above it.
func TestScaleEstimate(t *testing.T) {
	const total, sample = 1 << 21, 1 << 17
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, 1<<23)
	tests := []struct {
		name     string
		key      func(i int) uint64
		low, top float64 // allowed estimate / exact
	}{
		{"unique", func(i int) uint64 { return uint64(i) }, 0.99, 1.01},
		{"uniform, 6 rows a key", func(int) uint64 { return rng.Uint64N(total / 6) }, 1, 5},
		{"zipf (URL-like)", func(int) uint64 { return zipf.Uint64() }, 0.8, 3},
		{"100 keys", func(int) uint64 { return rng.Uint64N(100) }, 0.99, 1.01},
	}
	for _, tc := range tests {
		seen := map[uint64]bool{}
		var half, full groupSample
		for i := range total {
			seen[tc.key(i)] = true
			switch i + 1 {
			case sample / 2:
				half = groupSample{groups: int64(len(seen)), rows: sample / 2}
			case sample:
				full = groupSample{groups: int64(len(seen)), rows: sample}
			}
		}
		exact := float64(len(seen))
		got := scaleEstimate(half, full, sample, total)
		if r := float64(got) / exact; r < tc.low || r > tc.top {
			t.Errorf("%s: estimate %d for %d distinct keys (%.2f×; want %.2f–%.2f×); sample %d of %d rows had %d, half of it %d",
				tc.name, got, len(seen), r, tc.low, tc.top, sample, total, full.groups, half.groups)
		}
	}
	// The whole input seen: nothing to extrapolate.
	if got := scaleEstimate(groupSample{10, 5}, groupSample{20, 10}, 10, 10); got != 20 {
		t.Errorf("whole input: got %d, want 20", got)
	}
}

// TestChooseStrategyStringKeys: a string key's bytes count toward the table
// the choice compares with the cache, so long URL keys go radix where the
// same number of integer keys fits.
func TestChooseStrategyStringKeys(t *testing.T) {
	st := Settings{GroupBy: "auto", RadixBits: -1, Threads: 1}
	cache := CacheSizes{L1: 32 << 10, L2: 4 << 20, L3: 64 << 20}
	ints := chooseStrategy(st, cache, 1, 1, 1, &groupEstimate{groups: 500_000, rows: 1 << 20}, 0)
	urls := chooseStrategy(st, cache, 1, 1, 1, &groupEstimate{groups: 500_000, rows: 1 << 20, keyBytes: 80}, 0)
	if ints.name != "naive" || urls.name != "radix" {
		t.Fatalf("500k integer keys: %s; 500k 80-byte keys: %s; want naive, radix", ints.describe(), urls.describe())
	}
	if !strings.Contains(urls.why, "MiB") {
		t.Errorf("the choice should state the table size it compared: %s", urls.why)
	}
}

// TestChooseStrategyThreads: with one thread auto keeps naive while its
// table fits half the L3 and 8 times the L2 (a core's share of a server's
// L3); with more threads a table beyond the L2 goes to the parallel
// strategy (naive would leave the other cores idle), and a table within
// the L2 stays naive.
func TestChooseStrategyThreads(t *testing.T) {
	cache := CacheSizes{L1: 32 << 10, L2: 2 << 20, L3: 480 << 20}
	for _, tc := range []struct {
		threads int
		groups  int64
		want    string
	}{
		{1, 300_000, "naive"},       // ~11 MiB: within 8 times the L2
		{1, 1_000_000, "radix"},     // ~36 MiB: within half the L3, not 8 times the L2
		{2, 300_000, "parallel"},    // beyond the L2
		{2, 10_000, "naive"},        // within the L2
		{2, 20_000_000, "parallel"}, // beyond everything
		{1, 20_000_000, "radix"},
	} {
		st := Settings{GroupBy: "auto", RadixBits: -1, Threads: tc.threads}
		c := chooseStrategy(st, cache, 1, 1, 1, &groupEstimate{groups: tc.groups, rows: 1 << 20}, 0)
		if c.name != tc.want {
			t.Errorf("%d threads, %d groups: %s, want %s", tc.threads, tc.groups, c.describe(), tc.want)
		}
		if c.name == "parallel" && c.threads != tc.threads {
			t.Errorf("%d threads, %d groups: parallel on %d threads", tc.threads, tc.groups, c.threads)
		}
	}
}

// TestChooseRadixBits: radix_bits 'auto' takes enough partitions for each
// table to fit half the L2, but no more than keep the scatter's write
// streams (a hash stream and one per column, two for a string key) within
// radixStreams, and EXPLAIN says which bound decided.
func TestChooseRadixBits(t *testing.T) {
	cache := CacheSizes{L1: 32 << 10, L2: 512 << 10, L3: 32 << 20}
	st := Settings{GroupBy: "radix", RadixBits: -1, Threads: 1}
	for _, tc := range []struct {
		name          string
		keys, specs   int
		groups        int64
		keyBytes      int64
		bits          int
		streamBounded bool
	}{
		{"small table", 1, 1, 20_000, 0, 2, false},             // ~0.7 MiB: 4 partitions
		{"UserID, 3.5M groups", 1, 1, 3_500_000, 0, 8, true},   // 2048 by the L2, 3 streams each
		{"URL, 5.5M groups", 1, 1, 5_500_000, 60, 8, true},     // 4 streams each: 256
		{"UserID, SearchPhrase", 2, 1, 6_500_000, 20, 7, true}, // 5 streams each: 128
		{"many aggregates", 1, 7, 100_000, 0, 6, false},        // ~8 MiB: 64 partitions, 9 streams each
	} {
		est := &groupEstimate{groups: tc.groups, rows: 1 << 20, keyBytes: tc.keyBytes}
		c := chooseStrategy(st, cache, tc.keys, tc.specs, tc.specs, est, 0)
		if c.bits != tc.bits {
			t.Errorf("%s: %d partitions, want %d (%s)", tc.name, 1<<c.bits, 1<<tc.bits, c.why)
		}
		if got := strings.Contains(c.why, "L2 TLB"); got != tc.streamBounded {
			t.Errorf("%s: bounded by the write streams %v, want %v: %s", tc.name, got, tc.streamBounded, c.why)
		}
	}
}

// TestAggregatePeakCountsTables: the hash aggregate's peak memory in
// EXPLAIN ANALYZE includes its hash tables and radix partitions, not only
// the output it holds afterwards.
func TestAggregatePeakCountsTables(t *testing.T) {
	db := testDB(t)
	for _, strategy := range []string{"naive", "radix"} {
		s := db.NewSession()
		if err := s.Set("group_by", strategy); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Exec(context.Background(), "EXPLAIN ANALYZE SELECT S, count(*) FROM t GROUP BY S", nil)
		if err != nil {
			t.Fatal(err)
		}
		var agg *PlanNode
		var walk func(n *PlanNode)
		walk = func(n *PlanNode) {
			if strings.Contains(n.Name, "GROUP_BY") {
				agg = n
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(rs[0].Plan)
		if agg == nil {
			t.Fatalf("%s: no hash aggregate in the plan", strategy)
		}
		// 51 groups of ~4-byte keys and an 8-byte count: the output is
		// under 2 KiB, a table of 16+ slots alone is 256 bytes more and
		// radix partitions hold the 1000 input rows' hashes (8 KB).
		min := int64(2048)
		if strategy == "radix" {
			min = 8000
		}
		if agg.PeakBytes < min {
			t.Errorf("%s: aggregate peak %d bytes, want at least %d (tables and partitions)", strategy, agg.PeakBytes, min)
		}
	}
}

// TestChooseStrategyMemory: auto runs naive when radix partitions of every
// input row would take most of the memory limit and the naive table much
// less, and radix when the partitions fit.
func TestChooseStrategyMemory(t *testing.T) {
	st := Settings{GroupBy: "auto", RadixBits: -1, Threads: 1}
	cache := CacheSizes{L1: 32 << 10, L2: 1 << 20, L3: 32 << 20}
	// GROUP BY URL on 100M rows: ~17M groups of 37-byte keys.
	est := &groupEstimate{groups: 17_000_000, rows: 1 << 20, input: 100_000_000, keyBytes: 37}
	for _, tc := range []struct {
		limit int64
		want  string
	}{
		{4 << 30, "naive"},  // partitions ~6 GB, table ~1.3 GB
		{16 << 30, "radix"}, // both fit
		{0, "radix"},        // no limit
	} {
		c := chooseStrategy(st, cache, 1, 1, 1, est, tc.limit)
		if c.name != tc.want {
			t.Errorf("limit %d: %s, want %s", tc.limit, c.describe(), tc.want)
		}
	}
	// With two threads the same query runs parallel, spilling where the
	// file system lets it, rather than naive's one table behind a lock.
	st2 := st
	st2.Threads = 2
	c := chooseStrategy(st2, cache, 1, 1, 1, est, 4<<30)
	if spill.Supported() && (c.name != "parallel" || !c.spills) {
		t.Errorf("two threads, 4 GiB: %s, want parallel that spills", c.describe())
	}
	// COUNT(DISTINCT UserID) on 100M rows, as count(*) grouped by the
	// value, its estimate five times the true groups: partitions of a
	// hash and a key per row (count(*) has no input) fit in 4GB, so they
	// do not spill; with an input alongside they would.
	ids := &groupEstimate{groups: 88_000_000, rows: 1 << 20, input: 100_000_000}
	for _, tc := range []struct {
		inputs int
		spills bool
	}{{0, false}, {1, true}} {
		c := chooseStrategy(st2, cache, 1, 1, tc.inputs, ids, 4_000_000_000)
		if c.name != "parallel" || c.spills != (tc.spills && spill.Supported()) {
			t.Errorf("count by UserID, %d inputs, 4GB: %s (spills %v), want parallel, spills %v", tc.inputs, c.describe(), c.spills, tc.spills)
		}
	}
	// A table the caches would run naive (~3.6 MiB, within 8 times the
	// L2) but that passes three quarters of what the limit leaves runs
	// radix, which can spill.
	small := &groupEstimate{groups: 100_000, rows: 100_000, input: 1_000_000}
	for _, tc := range []struct {
		limit int64
		want  string
	}{
		{64 << 20, "naive"},
		{4 << 20, "radix"},
	} {
		c := chooseStrategy(st, cache, 1, 1, 1, small, tc.limit)
		if c.name != tc.want || tc.want == "radix" && !strings.Contains(c.why, "naive's table, which cannot spill, would not fit") {
			t.Errorf("limit %d: %s, want %s", tc.limit, c.describe(), tc.want)
		}
	}
}

// TestPlanAggregate: the plan decides the loop with the strategy, and its
// configuration and EXPLAIN lines follow from that one decision: no keys
// run the global states, one integer key with only count(*) the tuned loop
// unless generic_agg is set (which EXPLAIN says), anything else the
// generic table; naive runs agg.Naive, radix and parallel agg.Radix.
func TestPlanAggregate(t *testing.T) {
	cache := CacheSizes{L1: 32 << 10, L2: 1 << 20, L3: 32 << 20}
	count := []agg.Spec{{Kind: agg.CountStar}}
	sum := []agg.Spec{{Kind: agg.Sum, In: vec.Int64}}
	tests := []struct {
		name     string
		st       Settings
		keys     []vec.Type
		specs    []agg.Spec
		loop     agg.Loop
		strategy agg.Strategy
		threads  int
		explain  string // in the loop line
	}{
		{"global", Settings{GroupBy: "radix", RadixBits: 4, Threads: 1}, nil, sum, agg.GlobalLoop, agg.Naive, 1, "global aggregate states"},
		{"count naive", Settings{GroupBy: "naive", RadixBits: 4, Threads: 1}, []vec.Type{vec.Int64}, count, agg.CountLoop, agg.Naive, 1, "tuned integer-key count(*) loop"},
		{"count parallel", Settings{GroupBy: "parallel", RadixBits: 4, Threads: 3}, []vec.Type{vec.Int32}, count, agg.CountLoop, agg.Radix, 3, "tuned integer-key count(*) loop"},
		{"generic_agg", Settings{GroupBy: "radix", RadixBits: 4, Threads: 1, GenericAgg: true}, []vec.Type{vec.Int64}, count, agg.Generic, agg.Radix, 1, "disabled by SET generic_agg"},
		{"string key", Settings{GroupBy: "radix", RadixBits: 4, Threads: 1}, []vec.Type{vec.String}, count, agg.Generic, agg.Radix, 1, "generic hash table and aggregate states"},
		{"sum", Settings{GroupBy: "naive", RadixBits: 4, Threads: 1}, []vec.Type{vec.Int64}, sum, agg.Generic, agg.Naive, 1, "generic hash table and aggregate states"},
		{"packed 1 word", Settings{GroupBy: "radix", RadixBits: 4, Threads: 1}, []vec.Type{vec.Int16, vec.Int32}, count, agg.Generic, agg.Radix, 1, "hash table of packed keys (6 bytes in 1 word) and aggregate states"},
		{"packed 2 words", Settings{GroupBy: "naive", RadixBits: 4, Threads: 1}, []vec.Type{vec.Int32, vec.Int64}, sum, agg.Generic, agg.Naive, 1, "hash table of packed keys (12 bytes in 2 words) and aggregate states"},
		{"packed keys off", Settings{GroupBy: "radix", RadixBits: 4, Threads: 1, GenericAgg: true}, []vec.Type{vec.Int16, vec.Int32}, count, agg.Generic, agg.Radix, 1, "generic hash table and aggregate states (packed keys disabled by SET generic_agg)"},
		{"not packed", Settings{GroupBy: "naive", RadixBits: 4, Threads: 1}, []vec.Type{vec.Int64, vec.String}, sum, agg.Generic, agg.Naive, 1, "generic hash table and aggregate states"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := planAggregate(tc.st, cache, tc.keys, tc.specs, nil, 0)
			cfg := p.config(tc.st)
			if p.loop != tc.loop || cfg.Strategy != tc.strategy || cfg.Threads != tc.threads {
				t.Errorf("loop %d, strategy %d, %d threads; want %d, %d, %d", p.loop, cfg.Strategy, cfg.Threads, tc.loop, tc.strategy, tc.threads)
			}
			d := p.detail(len(tc.keys) > 0)
			if last := d[len(d)-1]; !strings.HasPrefix(last, "loop: ") || !strings.Contains(last, tc.explain) {
				t.Errorf("EXPLAIN's loop line %q, want it to name %q", last, tc.explain)
			}
			if grouped := len(tc.keys) > 0; grouped != (len(d) == 2) {
				t.Errorf("EXPLAIN lines %q: a strategy line only for a GROUP BY", d)
			}
		})
	}
}

// TestNaiveAndCountUnderLimit: naive estimates its groups only where a
// table of one group per input row could pass the limit, and radix hands
// the tuned count(*) loop over to the generic, spilling one only where its
// partitions could pass their share of the limit.
func TestNaiveAndCountUnderLimit(t *testing.T) {
	keys := []vec.Type{vec.Int64}
	naive := Settings{GroupBy: "naive", RadixBits: 4, Threads: 1}
	for _, tc := range []struct {
		limit, rows int64
		want        bool
	}{
		{8 << 30, 2_000_000, false},
		{4 << 20, 2_000_000, true},
		{4 << 20, 1000, false},
	} {
		naive.MemoryLimit = tc.limit
		if got := needsEstimate(naive, keys, 1, tc.rows); got != tc.want {
			t.Errorf("naive, limit %d, %d rows: estimate %v, want %v", tc.limit, tc.rows, got, tc.want)
		}
	}
	cache := CacheSizes{L1: 32 << 10, L2: 1 << 20, L3: 32 << 20}
	count := []agg.Spec{{Kind: agg.CountStar}}
	for _, tc := range []struct {
		limit, rows int64
		want        agg.Loop
	}{
		{8 << 30, 2_000_000, agg.CountLoop},
		{4 << 20, 2_000_000, agg.Generic},
		{4 << 20, 1000, agg.CountLoop},
	} {
		st := Settings{GroupBy: "parallel", RadixBits: 4, Threads: 2, MemoryLimit: tc.limit}
		p := planAggregate(st, cache, keys, count, nil, tc.limit)
		p.spillCount(tc.rows, tc.limit)
		if p.loop != tc.want || tc.want == agg.Generic && !strings.Contains(p.loopText(), "cannot spill") {
			t.Errorf("limit %d, %d rows: %s", tc.limit, tc.rows, p.loopText())
		}
	}
}
