package agg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"cachebook/engine/vec"
)

// groupsOf runs an aggregation and returns key → count.
func groupsOf(t testing.TB, keys *vec.Vector, cfg Config) map[string]int64 {
	t.Helper()
	out, err := Aggregate(context.Background(), []vec.Type{keys.Type}, []Spec{{Kind: CountStar}, {Kind: CountStar}}, cfg, source([]*vec.Vector{keys}, keys, 1000, 2))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for g := 0; g < out.Groups; g++ {
		if out.Aggs[0].I64[g] != out.Aggs[1].I64[g] {
			t.Fatalf("two count(*) columns differ at group %d", g)
		}
		m[out.Keys[0].Format(g)] += out.Aggs[0].I64[g]
	}
	if len(m) != out.Groups {
		t.Fatalf("%d distinct keys in %d groups: a key was emitted twice", len(m), out.Groups)
	}
	return m
}

func TestCountFastMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := vec.NewVector(vec.Int64, 0)
	for i := 0; i < 40000; i++ {
		if i%97 == 0 {
			keys.AppendNull()
			continue
		}
		keys.AppendInt(int64(r.IntN(9000)) - 100) // negatives and zero too
	}
	want := groupsOf(t, keys, Config{Strategy: Naive, Generic: true})
	pool := NewPool(1<<30, nil)
	for _, cfg := range []Config{
		{Strategy: Naive, HugePages: true},
		{Strategy: Radix, RadixBits: 12, Threads: 1, RowsHint: 40000, HugePages: true},
		{Strategy: Radix, RadixBits: 5, Threads: 2, RowsHint: 40000},
		{Strategy: Radix, RadixBits: 0, Threads: 1},
		{Strategy: Radix, RadixBits: 8, Threads: 3, RowsHint: 10}, // buffers overflow onto the heap
		// Twice with a pool: the second run reuses the first's mappings,
		// which must come back zeroed where a table needs it. The row hint
		// makes the slab big enough for its own mapping.
		{Strategy: Radix, RadixBits: 2, Threads: 1, RowsHint: 1 << 20, HugePages: true, Pool: pool},
		{Strategy: Radix, RadixBits: 2, Threads: 1, RowsHint: 1 << 20, HugePages: true, Pool: pool},
		{Strategy: Naive, HugePages: true, Pool: pool},
	} {
		got := groupsOf(t, keys, cfg)
		if len(got) != len(want) {
			t.Fatalf("%+v: %d groups, want %d", cfg, len(got), len(want))
		}
		for k, c := range want {
			if got[k] != c {
				t.Fatalf("%+v: key %s count %d, want %d", cfg, k, got[k], c)
			}
		}
	}
}

// BenchmarkCount compares the strategies on a GROUP BY of 2M shuffled int64
// keys with 350k groups (about the article's 5.67 rows per key) and with
// 2M groups (almost every key unique, where radix partitions sized for a
// quarter of their rows had to grow).
func BenchmarkCount(b *testing.B) {
	const rows = 2_000_000
	for _, groups := range []uint64{350_000, rows} {
		r := rand.New(rand.NewPCG(5, 6))
		keys := vec.NewVector(vec.Int64, rows)
		for i := 0; i < rows; i++ {
			keys.AppendInt(int64(r.Uint64() % groups * 2654435761))
		}
		for _, bc := range []struct {
			name string
			cfg  Config
		}{
			{"naive-generic", Config{Strategy: Naive, Generic: true}},
			{"naive-fast", Config{Strategy: Naive, HugePages: true}},
			{"radix-generic", Config{Strategy: Radix, RadixBits: 8, Threads: 1, Generic: true}},
			{"radix-fast", Config{Strategy: Radix, RadixBits: 8, Threads: 1, RowsHint: rows, HugePages: true}},
			{"parallel2-fast", Config{Strategy: Radix, RadixBits: 8, Threads: 2, RowsHint: rows, HugePages: true}},
		} {
			b.Run(fmt.Sprintf("groups=%d/%s", groups, bc.name), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, []Spec{{Kind: CountStar}}, bc.cfg, source([]*vec.Vector{keys}, keys, 16384, 1)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
			})
		}
	}
}

func TestDefaultPoolBytes(t *testing.T) {
	n := DefaultPoolBytes()
	if runtime.GOOS == "linux" && (n < 2<<30 || n > 8<<30) {
		t.Fatalf("DefaultPoolBytes() = %d, want 2..8 GiB", n)
	}
}

// TestStoreLine: storeLine copies a line to an aligned destination,
// leaving its neighbours alone, and lineAligned finds the lines.
func TestStoreLine(t *testing.T) {
	buf := make([]int64, 8*wcLine)
	base := 0
	for !lineAligned(buf, base) {
		base++
	}
	if base >= wcLine || lineAligned(buf, base+1) {
		t.Fatalf("lineAligned: first line at element %d", base)
	}
	var src [wcLine]int64
	for i := range src {
		src[i] = int64(i*i) - 7
	}
	for _, line := range []int{0, 1, 5} {
		n := base + line*wcLine
		if !lineAligned(buf, n) {
			t.Fatalf("lineAligned(buf, %d) = false", n)
		}
		storeLine((*[wcLine]int64)(buf[n:n+wcLine]), &src)
	}
	storeFence()
	for i, v := range buf[base : base+6*wcLine] {
		want := int64(0)
		if line := i / wcLine; line == 0 || line == 1 || line == 5 {
			want = src[i%wcLine]
		}
		if v != want {
			t.Fatalf("element %d: %d, want %d", i, v, want)
		}
	}
}
