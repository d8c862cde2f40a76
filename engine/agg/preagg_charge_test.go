package agg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"cachebook/engine/vec"
)

// chunkBytes returns the bytes the chunks of sc hold room for and the
// bytes written into them.
func chunkBytes(sc *scatterer) (room, used int64) {
	for _, pt := range sc.parts {
		for _, c := range pt.chunks {
			room += int64(cap(c.hashes)) * 8
			used += int64(len(c.hashes)) * 8
			for _, v := range c.cols {
				switch {
				case v == nil:
				case v.Type == vec.String:
					room += int64(cap(v.Bytes)) + int64(cap(v.Offsets))*4
					used += int64(len(v.Bytes)) + int64(len(v.Offsets))*4
				default:
					room += int64(cap(v.I64)+cap(v.F64)) * 8
					used += int64(len(v.I64)+len(v.F64)) * 8
				}
			}
		}
	}
	return room, used
}

// TestPreAggDirectRoom: the chunks a direct window's partitions take (all
// of them charged to the budget) are mostly written, when the windows
// fold better as they grow, as URLs do: a partition's next chunk is sized
// from what the windows so far kept, not from the first window alone.
func TestPreAggDirectRoom(t *testing.T) {
	const rows, morsel = 1 << 20, 1 << 14
	orders := map[string]func(rng *rand.Rand, i int) int{
		// Most rows from a warm set, the rest a tail: the larger the
		// window, the more of its rows it folds.
		"warm and tail": func(rng *rand.Rand, i int) int {
			if rng.IntN(10) < 8 {
				return rng.IntN(1 << 14)
			}
			return 1<<14 + rng.IntN(1<<24)
		},
		"runs": func(rng *rand.Rand, i int) int { return i / 3 },
	}
	for name, key := range orders {
		rng := rand.New(rand.NewPCG(3, 4))
		keys := vec.NewVector(vec.String, rows)
		for i := range rows {
			keys.AppendStr(fmt.Appendf(nil, "http://example.org/%d/page.html", key(rng, i)))
		}
		in := preAggInput{keys: []*vec.Vector{keys}, args: []*vec.Vector{nil}, specs: []Spec{{Kind: CountStar}}}
		cfg := Config{Strategy: Radix, RadixBits: 6, Threads: 1, RowsHint: rows, Budget: &Budget{}}
		ag, err := New([]vec.Type{vec.String}, in.specs, Generic, cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := in.source(morsel)
		for {
			m, ok, err := src(0)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if err := ag.Sink(0, m); err != nil {
				t.Fatal(err)
			}
		}
		if err := ag.Flush(0); err != nil {
			t.Fatal(err)
		}
		r := ag.(*radix)
		if r.pres[0].dw == nil || r.pres[0].stats.Flushes < 2 {
			t.Fatalf("%s: want a direct window flushed more than once, got %+v", name, r.pres[0].stats)
		}
		room, used := chunkBytes(r.pres[0].part)
		t.Logf("%s: %+v; chunks hold room for %.1f MB, %.1f MB written", name, r.pres[0].stats, float64(room)/1e6, float64(used)/1e6)
		if room > used*5/4 {
			t.Errorf("%s: chunks hold room for %d bytes, %d written: more than a quarter of it empty", name, room, used)
		}
		ag.Close()
	}
}
