package agg

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"cachebook/engine/vec"
)

// recorder remembers, per buffer, the offsets written with 16-byte
// stores (the count table's inserts) and the buffers' sizes.
type recorder struct {
	sizes  []int64
	writes []map[int64]bool
	phases []string
	bad    string
}

func (r *recorder) Alloc(w int, n int64, huge, zeroed bool) int {
	r.sizes = append(r.sizes, n)
	r.writes = append(r.writes, map[int64]bool{})
	return len(r.sizes) - 1
}

func (r *recorder) Access(w, buf int, off int64, size int, write bool) {
	if buf < 0 || buf >= len(r.sizes) || off < 0 || off+int64(size) > r.sizes[buf] {
		r.bad = "access outside its buffer"
	}
	if write && size == 16 {
		r.writes[buf][off] = true
	}
}

func (r *recorder) Range(w, buf int, off, size int64, write bool) {
	if size > 0 {
		r.Access(w, buf, off, 1, write)
		r.Access(w, buf, off+size-1, 1, write)
	}
}

func (r *recorder) Phase(w int, name string) { r.phases = append(r.phases, name) }

func randomKeys(n, distinct int, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 1))
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = int64(r.IntN(distinct)) - int64(distinct/3)
	}
	return keys
}

// TestTraceSlotsMatch pins that the traced count table puts every key in
// the slot the real table uses, through every growth, and that the slots
// the trace reports writing are exactly the real table's occupied slots.
func TestTraceSlotsMatch(t *testing.T) {
	for _, distinct := range []int{1, 11, 1000, 50000} {
		keys := randomKeys(100000, distinct, uint64(distinct))
		real, err := newCountTable(0, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := real.add(keys); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		in := TraceMorsel{Keys: keys, Buf: rec.Alloc(0, int64(len(keys))*8, false, false)}
		tt, err := newTracedTable(0, false, nil, newTraceBuf(rec), 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := tt.add(keys, in, 0); err != nil {
			t.Fatal(err)
		}
		tt.tr.flush()
		if !slices.Equal(real.slots, tt.slots) {
			t.Fatalf("%d distinct: traced table's slots differ from the real table's", distinct)
		}
		var occupied []int64
		for j := 0; j < len(real.slots)/2; j++ {
			if real.slots[2*j+1] != 0 {
				occupied = append(occupied, int64(j)*CountSlotBytes)
			}
		}
		var traced []int64
		for off := range rec.writes[tt.buf] {
			traced = append(traced, off)
		}
		slices.Sort(traced)
		if !slices.Equal(occupied, traced) {
			t.Errorf("%d distinct: trace wrote %d slots of the final table, the real table holds %d", distinct, len(traced), len(occupied))
		}
		if rec.bad != "" {
			t.Error(rec.bad)
		}
	}
}

// TestTracePartitionsMatch pins that the traced scatter fills the same
// partitions, in the same order, as the real one, and that a traced run
// finds the groups a real run finds.
func TestTracePartitionsMatch(t *testing.T) {
	keys := randomKeys(200000, 30000, 7)
	for _, bits := range []int{0, 4, 12} {
		real, err := newCountScatter(bits, int64(len(keys)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(keys); i += 1000 {
			real.scatter(keys[i:i+1000], uint(64-bits))
		}
		real.flush()
		rec := &recorder{}
		tr, err := newTracedScatter(bits, int64(len(keys)), false, nil, newTraceBuf(rec), 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := rec.Alloc(0, int64(len(keys))*8, false, false)
		for i := 0; i < len(keys); i += 1000 {
			tr.scatter(TraceMorsel{Keys: keys[i : i+1000], Buf: buf, Off: int64(i) * 8}, uint(64-bits))
		}
		tr.flush()
		tr.tr.flush()
		for p := range real.parts {
			if !slices.Equal(real.parts[p], tr.parts[p]) {
				t.Fatalf("bits %d: partition %d differs", bits, p)
			}
		}
		if rec.bad != "" {
			t.Error(rec.bad)
		}
	}
	for _, cfg := range []TraceConfig{
		{Strategy: Naive},
		{Strategy: Radix, Threads: 1, RadixBits: 8, RowsHint: int64(len(keys))},
		{Strategy: Radix, Threads: 3, RadixBits: 6, RowsHint: int64(len(keys))},
		{Strategy: Radix, Threads: 2, RadixBits: 4, RowsHint: 1000}, // partitions overflow their slab share
	} {
		out, err := Aggregate(context.Background(), []vec.Type{vec.Int64}, []Spec{{Kind: CountStar}},
			Config{Strategy: cfg.Strategy, Threads: cfg.Threads, RadixBits: cfg.RadixBits, RowsHint: cfg.RowsHint}, keySource(keys, 1000))
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		buf := rec.Alloc(0, int64(len(keys))*8, false, false)
		var ms []TraceMorsel
		for i := 0; i < len(keys); i += 1000 {
			ms = append(ms, TraceMorsel{Keys: keys[i : i+1000], Buf: buf, Off: int64(i) * 8})
		}
		groups, err := TraceCount(context.Background(), cfg, ms, rec)
		if err != nil {
			t.Fatal(err)
		}
		if groups != out.Groups {
			t.Errorf("%+v: traced %d groups, real %d", cfg, groups, out.Groups)
		}
		if rec.bad != "" {
			t.Errorf("%+v: %s", cfg, rec.bad)
		}
	}
}

// keySource hands out keys as morsels of m rows to any worker.
func keySource(keys []int64, m int) Source {
	var mu sync.Mutex
	off := 0
	return func(int) (Input, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if off >= len(keys) {
			return Input{}, false, nil
		}
		end := min(off+m, len(keys))
		v := vec.NewVector(vec.Int64, 0)
		v.I64, v.Len = keys[off:end], end-off
		off = end
		return Input{Keys: []*vec.Vector{v}, Args: []*vec.Vector{nil}, N: v.Len}, true, nil
	}
}

func TestGrowCap(t *testing.T) {
	// Small slices double; large ones grow by about a quarter, rounded
	// up to whole 8 KiB pages (5312 int64s = 41.5 KiB -> 48 KiB).
	for _, tc := range []struct{ old, need, want int64 }{{8, 9, 16}, {100, 101, 200}, {0, 5, 5}, {4096, 4097, 6144}} {
		if got := growCap(tc.old, tc.need, 8); got != tc.want {
			t.Errorf("growCap(%d, %d) = %d, want %d", tc.old, tc.need, got, tc.want)
		}
	}
}

func TestTraceBudget(t *testing.T) {
	keys := randomKeys(100000, 50000, 3)
	rec := &recorder{}
	buf := rec.Alloc(0, int64(len(keys))*8, false, false)
	ms := []TraceMorsel{{Keys: keys, Buf: buf}}
	_, err := TraceCount(context.Background(), TraceConfig{Strategy: Naive, Budget: &Budget{Limit: 64 << 10}}, ms, rec)
	if !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("count path over budget: %v", err)
	}
	in := []TraceInput{{In: Input{Keys: []*vec.Vector{{Type: vec.Int64, I64: keys, Len: len(keys)}}, Args: []*vec.Vector{nil}, N: len(keys)},
		Keys: []TraceCol{{Buf: buf}}, Args: []TraceCol{{Buf: -1}}}}
	_, err = TraceAggregate(context.Background(), TraceAggConfig{TraceConfig: TraceConfig{Strategy: Naive, Budget: &Budget{Limit: 64 << 10}}},
		[]vec.Type{vec.Int64}, []Spec{{Kind: CountStar}}, in, rec)
	if !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("generic path over budget: %v", err)
	}
}
