//go:build linux

package agg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

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

// TestFreshHugePages: before its first fresh mapping the pool probes what
// fresh huge and small pages cost to fault in and states it; once it has
// chosen small pages, a fresh mapping is not advised for huge pages.
func TestFreshHugePages(t *testing.T) {
	pool := NewPool(1<<30, nil)
	defer pool.Drain()
	if note := pool.HugePageNote(); note != "" {
		t.Fatalf("before any mapping the note is %q", note)
	}
	a := NewArena(true, pool)
	b, err := a.Bytes(4<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	if b[len(b)-1] != 0 || b[0] != 0 {
		t.Fatal("a fresh mapping is not zero")
	}
	note := pool.HugePageNote()
	if !strings.Contains(note, "s/GB to fault in") && !strings.Contains(note, "not measured") {
		t.Fatalf("after a fresh mapping the note is %q", note)
	}
	t.Log(note)
	if !pool.fresh.small4K && strings.Contains(note, "use huge pages") {
		if !thpAdvised(t, b) {
			t.Errorf("huge pages chosen, yet the fresh mapping is not advised for them")
		}
	}
	a.Free()

	pool2 := NewPool(0, nil)
	pool2.fresh.probed, pool2.fresh.small4K = true, true
	c := NewArena(true, pool2)
	m, err := c.Bytes(hugeMin, false)
	if err != nil {
		t.Fatal(err)
	}
	if pool2.HugePageNote() != "" {
		t.Errorf("small pages chosen, yet the pool measured again: %q", pool2.HugePageNote())
	}
	if huge := thpAdvised(t, m); huge {
		t.Errorf("small pages chosen, yet the fresh mapping is advised for huge pages")
	}
	c.Free()
}

// TestFreshDearRuns: where the first huge page of a fresh mapping costs
// more than twice as much per byte as small pages, the rest of that
// mapping keeps small pages, and freshDearRuns such mappings in a row
// turn later fresh mappings to small pages; a cheap one between starts
// the count again.
func TestFreshDearRuns(t *testing.T) {
	const base = 0.5 // ns per byte, that is s/GB, of small pages
	cheap := time.Duration(hugeMin / 5)
	dear := time.Duration(3 * hugeMin)
	tests := []struct {
		name  string
		pages []time.Duration
		rest  bool // the last mapping's rest keeps small pages
		small bool // later fresh mappings keep small pages
	}{
		{"all cheap", []time.Duration{cheap, cheap, cheap}, false, false},
		{"one dear", []time.Duration{cheap, dear, cheap}, false, false},
		{"dear, cheap, dear", []time.Duration{dear, cheap, dear}, true, false},
		{"two dear in a row", []time.Duration{cheap, dear, dear}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool(0, nil)
			p.fresh.probed, p.fresh.base = true, base
			var rest bool
			for _, d := range tt.pages {
				rest = p.judgeFresh(d)
			}
			if rest != tt.rest || p.fresh.small4K != tt.small {
				t.Fatalf("after %v: rest small %v, small4K %v; want %v, %v", tt.pages, rest, p.fresh.small4K, tt.rest, tt.small)
			}
			if note := p.HugePageNote(); tt.small != strings.Contains(note, "later fresh mappings use 4 KiB pages") {
				t.Errorf("note %q", note)
			}
			if tt.small && !p.keepSmall() {
				t.Error("small pages chosen, yet keepSmall says otherwise")
			}
		})
	}
	// Small pages timed dear themselves do not let dear huge pages pass,
	// nor make small pages the choice where huge ones are cheaper still.
	for _, c := range []struct {
		cost, base float64
		dear       bool
	}{{2.9, 1.5, true}, {0.25, 0.4, false}, {0.9, 0.4, true}, {0.9, 0.6, false}, {2.2, 2.54, false}} {
		if got := dearer(c.cost, c.base); got != c.dear {
			t.Errorf("dearer(%v s/GB, small pages %v s/GB) = %v, want %v", c.cost, c.base, got, c.dear)
		}
	}
}

// TestFreshDearMapping: where every huge page counts as dear, the first
// fresh mapping keeps its first huge page and leaves the rest on small
// pages, the second turns the pool to small pages, and the third is not
// advised for huge pages at all.
func TestFreshDearMapping(t *testing.T) {
	pool := NewPool(0, nil)
	defer pool.Drain()
	pool.fresh.probed, pool.fresh.base = true, 1e-9 // every page dearer than twice this
	a := NewArena(true, pool)
	defer a.Free()
	first, err := a.Bytes(4*hugeMin, false)
	if err != nil {
		t.Fatal(err)
	}
	if !thpAdvised(t, first) {
		t.Skip("no transparent huge pages here")
	}
	if !vmFlags(t, first[len(first)-1:], " nh") {
		t.Errorf("the rest of a mapping whose first huge page was dear is not kept on small pages")
	}
	if pool.fresh.small4K {
		t.Errorf("one dear page turned the pool to small pages")
	}
	if _, err := a.Bytes(4*hugeMin, false); err != nil {
		t.Fatal(err)
	}
	if !pool.fresh.small4K {
		t.Fatalf("two dear pages in a row left the pool on huge pages: %q", pool.HugePageNote())
	}
	third, err := a.Bytes(4*hugeMin, false)
	if err != nil {
		t.Fatal(err)
	}
	if thpAdvised(t, third) {
		t.Errorf("a fresh mapping after two dear ones is advised for huge pages")
	}
	t.Log(pool.HugePageNote())
}

// thpAdvised reports whether the mapping holding m is advised for huge
// pages, from /proc/self/smaps (its VmFlags list hg).
func thpAdvised(t *testing.T, m []byte) bool {
	t.Helper()
	return vmFlags(t, m, " hg")
}

// vmFlags reports whether the VmFlags of the mapping holding m, in
// /proc/self/smaps, include flag (" hg": advised for huge pages, " nh":
// advised against them).
func vmFlags(t *testing.T, m []byte, flag string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	addr := uint64(uintptr(unsafe.Pointer(&m[0])))
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		var lo, hi uint64
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasPrefix(line, "VmFlags") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Contains(line, flag)
		}
	}
	t.Fatalf("mapping at %#x not found in smaps", addr)
	return false
}
