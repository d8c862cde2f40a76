//go:build linux

package agg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"cachebook/engine/vec"
)

// TestPoolMapped: every mapping an arena makes is reported to the pool's
// callback while it exists, kept or in use, and Drain unmaps what the pool
// keeps.
func TestPoolMapped(t *testing.T) {
	var mapped atomic.Int64
	pool := NewPool(64<<20, func(d int64) { mapped.Add(d) })
	a := NewArena(true, pool)
	if _, err := a.Bytes(3<<20, true); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Int64s(1<<20, true); err != nil {
		t.Fatal(err)
	}
	if got := mapped.Load(); got != 4<<20+8<<20 {
		t.Errorf("in use: %d bytes reported mapped, want %d", got, 4<<20+8<<20)
	}
	a.Free()
	if got := mapped.Load(); got != 12<<20 {
		t.Errorf("kept by the pool: %d bytes reported mapped, want %d", got, 12<<20)
	}
	b := NewArena(true, pool)
	if _, err := b.Bytes(3<<20, false); err != nil { // reuses the 4 MiB mapping
		t.Fatal(err)
	}
	if got := mapped.Load(); got != 12<<20 {
		t.Errorf("after reuse: %d bytes reported mapped, want %d", got, 12<<20)
	}
	b.Free()
	pool.Drain()
	if got := mapped.Load(); got != 0 {
		t.Errorf("after Drain: %d bytes still reported mapped", got)
	}
}

// TestRadixMapsWithinLimit: radix partition blocks are charged before they
// are mapped, so a GROUP BY that would pass its memory limit fails with
// ErrMemoryLimit having mapped no more than the limit.
func TestRadixMapsWithinLimit(t *testing.T) {
	const rows, limit = 400_000, 8 << 20
	keys := vec.NewVector(vec.String, rows)
	for i := range rows {
		keys.AppendStr(fmt.Appendf(nil, "https://example.com/page/%d/%040d", i, i))
	}
	var mapped, peak atomic.Int64
	pool := NewPool(1<<30, func(d int64) {
		m := mapped.Add(d)
		for p := peak.Load(); m > p && !peak.CompareAndSwap(p, m); p = peak.Load() {
		}
	})
	off := 0
	src := func(int) (Input, bool, error) {
		if off >= rows {
			return Input{}, false, nil
		}
		end := min(off+16384, rows)
		in := Input{N: end - off, Keys: []*vec.Vector{keys.Slice(off, end)}, Args: []*vec.Vector{nil}}
		off = end
		return in, true, nil
	}
	cfg := Config{Strategy: Radix, RadixBits: 8, Threads: 1, HugePages: true, Pool: pool, RowsHint: rows, Budget: &Budget{Limit: limit}}
	_, err := Aggregate(context.Background(), []vec.Type{vec.String}, []Spec{{Kind: CountStar}}, cfg, src)
	if !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("25 MB of keys under an 8 MiB limit: %v, want ErrMemoryLimit", err)
	}
	if p := peak.Load(); p > limit {
		t.Errorf("mapped up to %d bytes under a limit of %d", p, limit)
	}
	pool.Drain()
}

// TestFreshHugePages: after freshProbeBytes of fresh huge mappings the
// pool states what fresh huge and small pages cost to fault in and which
// it keeps using, and once it has chosen small pages a fresh mapping is
// neither advised for huge pages nor faulted in up front.
func TestFreshHugePages(t *testing.T) {
	pool := NewPool(1<<30, nil)
	defer pool.Drain()
	a := NewArena(true, pool)
	for range freshProbeBytes / freshProbeMin {
		b, err := a.Bytes(freshProbeMin, false)
		if err != nil {
			t.Fatal(err)
		}
		if b[len(b)-1] != 0 {
			t.Fatal("a fresh mapping is not zero")
		}
	}
	note := pool.HugePageNote()
	if !strings.Contains(note, "s/GB to fault in") && !strings.Contains(note, "not supported") {
		t.Fatalf("after %d MiB of fresh mappings the note is %q", freshProbeBytes>>20, note)
	}
	t.Log(note)
	a.Free()

	pool2 := NewPool(0, nil)
	pool2.fresh.small4K = true
	b := NewArena(true, pool2)
	m, err := b.Bytes(freshProbeMin, false)
	if err != nil {
		t.Fatal(err)
	}
	if pool2.fresh.probed != 0 {
		t.Errorf("small pages chosen, yet %d bytes were faulted in to be timed", pool2.fresh.probed)
	}
	m[0] = 1
	b.Free()
}
