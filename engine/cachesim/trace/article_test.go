package trace

import (
	"context"
	"flag"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
)

var (
	articleRows = flag.Int("article-rows", 0, "rows for TestArticle (0 skips it; the article has 99,997,497)")
	articleOne  = flag.Bool("article-one", false, "TestArticle: only the 16 MiB L3, prefetch off variant")
)

// userKeys returns rows UserIDs shaped like engine/gen's: rows/5.67 users,
// each present once, the other rows drawn by a power law (exponent 0.53)
// over user ranks, shuffled. The IDs are scrambled ranks.
func userKeys(rows int, seed uint64) []int64 {
	users := max(1, int(float64(rows)/5.67+0.5))
	r := rand.New(rand.NewPCG(seed, 5))
	keys := make([]int64, rows)
	e := 1 - 0.53
	b := math.Pow(float64(users), e)
	for i := range keys {
		u := i
		if i >= users {
			u = min(int(math.Pow(r.Float64()*b, 1/e)), users-1)
		}
		keys[i] = int64(agg.Mix64(uint64(u)+12345) >> 1)
	}
	r.Shuffle(rows, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// TestArticle models the article's query on the article's machine as we
// assume it (cachesim.EPYC9124) and prints DRAM demand fills per row for
// naive and radix with 4096 partitions, next to the article's 0.76 and
// 0.26. Run with -article-rows=10000000 (or more).
func TestArticle(t *testing.T) {
	if *articleRows == 0 {
		t.Skip("run with -article-rows=N")
	}
	keys := userKeys(*articleRows, 1)
	for _, v := range []struct {
		l3 int64
		pf cachesim.Prefetch
	}{{16 << 20, cachesim.PrefetchOff}, {32 << 20, cachesim.PrefetchOff}, {16 << 20, cachesim.PrefetchStride}} {
		if *articleOne && (v.l3 != 16<<20 || v.pf != cachesim.PrefetchOff) {
			continue
		}
		g := cachesim.EPYC9124()
		g.L3.Size, g.Prefetch = v.l3, v.pf
		l3 := v.l3
		s := AutoSampling(g, 1.0/16)
		for _, c := range []struct {
			name    string
			o       Options
			article float64
		}{
			{"naive", Options{Strategy: agg.Naive}, 76190837.0 / 99997497},
			{"radix 4096", Options{Strategy: agg.Radix, Threads: 1, RadixBits: 12}, 25688280.0 / 99997497},
		} {
			o := c.o
			o.Geometry, o.Sampling = g, s
			start := time.Now()
			res, err := Count(context.Background(), keys, o)
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			n := float64(res.Rows)
			t.Logf("L3 %d MiB, prefetch %s, %s: %d rows, %d groups: DRAM demand fills %.3f/row (article %.2f), writes %.3f/row, L1 %.3f/row, L2 %.3f/row, walks %.4f/row, prefetch fills %.3f/row, error ±%.1f%%; %s, %.2fM rows/s",
				l3>>20, g.Prefetch, c.name, res.Rows, res.Groups, float64(res.Total.DRAMReads)/n, c.article, float64(res.Total.DRAMWrites)/n,
				float64(res.Total.L1.Misses)/n, float64(res.Total.L2.Misses)/n, float64(res.Total.TLBWalks)/n, float64(res.Total.PrefetchReads)/n,
				100*res.Total.RelErr.DRAMReads, s, n/el.Seconds()/1e6)
		}
	}
}

var (
	sweepRows = flag.Int("sweep-rows", 0, "rows for TestSweep (0 skips it)")
	sweepGeo  = flag.String("sweep-geometry", "", "geometry overrides for TestSweep (cachesim.Parse)")
	sweepHuge = flag.Bool("sweep-huge", false, "TestSweep: tables and partitions on huge pages (the engine's huge_pages default)")
)

// TestSweep prints modelled misses per row of naive and radix as the
// number of groups grows 10³…10⁷ (uniform keys with exactly G distinct
// values, as the sweep cell generates them), for the measured sweep's
// table beside it.
func TestSweep(t *testing.T) {
	if *sweepRows == 0 {
		t.Skip("run with -sweep-rows=N")
	}
	g, err := cachesim.Parse(cachesim.DefaultGeometry(), *sweepGeo)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("geometry: %s", g)
	for _, groups := range []int{1e3, 1e4, 1e5, 1e6, 1e7} {
		if groups > *sweepRows {
			continue
		}
		keys := keysFor(*sweepRows, groups, 9)
		for _, c := range []struct {
			name string
			o    Options
		}{
			{"naive", Options{Strategy: agg.Naive}},
			{"radix", Options{Strategy: agg.Radix, Threads: 1, RadixBits: radixBitsFor(groups, g.L2.Size)}},
		} {
			o := c.o
			o.Geometry, o.Sampling, o.HugePages = g, AutoSampling(g, 1.0/16), *sweepHuge
			res, err := Count(context.Background(), keys, o)
			if err != nil {
				t.Fatal(err)
			}
			n := float64(res.Rows)
			t.Logf("groups %8d %-6s bits %2d: L1 %.3f L2 %.3f L3 %.3f DRAM read %.3f written %.3f TLB walks %.4f per row (±%.1f%%)",
				groups, c.name, o.RadixBits, float64(res.Total.L1.Misses)/n, float64(res.Total.L2.Misses)/n, float64(res.Total.L3.Misses)/n,
				float64(res.Total.DRAMReads)/n, float64(res.Total.DRAMWrites)/n, float64(res.Total.TLBWalks)/n, 100*res.Total.RelErr.Max())
		}
	}
}

// radixBitsFor is the engine's choice for radix_bits = auto
// (engine.chooseStrategy): enough partitions that each partition's table,
// about 38 bytes per group for one key and count(*), fits half of L2, but
// no more than keep the scatter's 3 write streams a partition (hashes,
// key, aggregate) within 1024.
func radixBitsFor(groups int, l2 int64) int {
	tableBytes := int64(groups) * (16*10/7 + 8 + 8)
	b := 1
	for b < 12 && tableBytes>>b > l2/2 {
		b++
	}
	for b > 1 && 3<<b > 1024 {
		b--
	}
	return b
}
