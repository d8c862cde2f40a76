package agg

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"cachebook/engine/vec"
)

// TestTableChargesKeys: the stored keys of a table, not only its slots,
// are charged to the budget, and a budget too small for them fails with
// ErrMemoryLimit.
func TestTableChargesKeys(t *testing.T) {
	const groups = 1000
	keys := vec.NewVector(vec.String, groups)
	ints := vec.NewVector(vec.Int64, groups)
	for i := range groups {
		keys.AppendStr([]byte(fmt.Sprintf("%04d%s", i, strings.Repeat("x", 96))))
		ints.AppendInt(int64(i))
	}
	tests := []struct {
		name  string
		types []vec.Type
		cols  []*vec.Vector
		min   int64 // key bytes at least
	}{
		{"string", []vec.Type{vec.String}, []*vec.Vector{keys}, groups * 100},
		{"two columns", []vec.Type{vec.Int64, vec.String}, []*vec.Vector{ints, keys}, groups * 108},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHasher()
			hashes := make([]uint64, groups)
			gids := make([]uint32, groups)
			h.Hash(tt.cols, groups, hashes)

			b := &Budget{}
			tab, err := NewTable(tt.types, groups, b)
			if err != nil {
				t.Fatal(err)
			}
			slots := b.Used()
			if err := tab.Group(tt.cols, hashes, groups, gids); err != nil {
				t.Fatal(err)
			}
			if got := b.Used() - slots; got < tt.min || got != tab.KeyBytes() {
				t.Errorf("keys charged %d bytes (KeyBytes %d), want at least %d", got, tab.KeyBytes(), tt.min)
			}

			small := &Budget{Limit: slots + tt.min/2}
			tab, err = NewTable(tt.types, groups, small)
			if err != nil {
				t.Fatal(err)
			}
			if err := tab.Group(tt.cols, hashes, groups, gids); !errors.Is(err, ErrMemoryLimit) {
				t.Errorf("under a limit half the keys' size: %v, want ErrMemoryLimit", err)
			}
		})
	}
}

// TestTableReserve: keys reserved ahead are charged at once, and grouping
// as many keys as were reserved keeps the key columns where they are (no
// doubling, no copy).
func TestTableReserve(t *testing.T) {
	const groups = 1000
	keys := vec.NewVector(vec.String, groups)
	for i := range groups {
		keys.AppendStr([]byte(fmt.Sprintf("%04d%s", i, strings.Repeat("y", 36))))
	}
	h := NewHasher()
	hashes := make([]uint64, groups)
	gids := make([]uint32, groups)
	h.Hash([]*vec.Vector{keys}, groups, hashes)
	b := &Budget{}
	tab, err := NewTable([]vec.Type{vec.String}, groups, b)
	if err != nil {
		t.Fatal(err)
	}
	slots := b.Used()
	if err := tab.Reserve(groups, []int64{groups * 40}); err != nil {
		t.Fatal(err)
	}
	if got := b.Used() - slots; got < groups*44 {
		t.Errorf("reserved keys charged %d bytes, want at least %d", got, groups*44)
	}
	k := tab.Keys()[0]
	bytes0, offs0 := &k.Bytes[:1][0], &k.Offsets[0]
	if err := tab.Group([]*vec.Vector{keys}, hashes, groups, gids); err != nil {
		t.Fatal(err)
	}
	if tab.Len() != groups || &k.Bytes[0] != bytes0 || &k.Offsets[0] != offs0 {
		t.Errorf("%d groups; key columns moved: %v %v", tab.Len(), &k.Bytes[0] != bytes0, &k.Offsets[0] != offs0)
	}
}

// TestPartSizer predicts a partition's groups and key bytes from those
// aggregated before it, whatever its rows (a hot key's partition has many
// rows but not more groups), its table for a quarter more than the average
// and its keys for a sixteenth more, and falls back to half its rows,
// capped by the estimate of the groups, before it has two.
func TestPartSizer(t *testing.T) {
	ps := newPartSizer(1, 0, 4)
	if g, kr, kb := ps.predict(1000); g != 500 || kr != 500 || kb != nil {
		t.Fatalf("no history, no estimate: %d groups, keys of %d, %v bytes; want 500, 500, none", g, kr, kb)
	}
	if g, kr, _ := newPartSizer(1, 400, 4).predict(1000); g != 232 || kr != 232 {
		t.Fatalf("no history, 400 groups estimated over 4 partitions: %d groups, keys of %d; want 2×(100+16)", g, kr)
	}
	for range 2 {
		tab, err := NewTable([]vec.Type{vec.String}, 16, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys := vec.NewVector(vec.String, 300)
		for i := range 300 {
			keys.AppendStr([]byte(fmt.Sprintf("%040d", i)))
		}
		h := NewHasher()
		hashes := make([]uint64, 300)
		h.Hash([]*vec.Vector{keys}, 300, hashes)
		if err := tab.Group([]*vec.Vector{keys}, hashes, 300, make([]uint32, 300)); err != nil {
			t.Fatal(err)
		}
		ps.record(tab) // 300 groups of 40 bytes
	}
	for _, rows := range []int{1000, 1_000_000} {
		g, kr, kb := ps.predict(rows)
		if g < 300 || g > 400 || kr < 300 || kr > 340 || len(kb) != 1 || kb[0] != int64(kr)*40 {
			t.Errorf("after two partitions of 300 groups: predicted %d groups, keys of %d, %v bytes for %d rows; want a table for 300–400 groups and keys for 300–340 groups of 40 bytes", g, kr, kb, rows)
		}
	}
}

// TestTableRestart: a table restarted for a radix worker's next partition
// keeps its slots when they are enough, finds none of the old groups, and
// stays charged for the slots it uses (the old keys' charge went out with
// them).
func TestTableRestart(t *testing.T) {
	h := NewHasher()
	strs := func(prefix string, n int) (*vec.Vector, []uint64) {
		v := vec.NewVector(vec.String, n)
		for i := range n {
			v.AppendStr([]byte(fmt.Sprintf("%s-%d", prefix, i%(n/2))))
		}
		hs := make([]uint64, n)
		h.Hash([]*vec.Vector{v}, n, hs)
		return v, hs
	}
	b := &Budget{}
	tab, err := NewTable([]vec.Type{vec.String}, 1000, b)
	if err != nil {
		t.Fatal(err)
	}
	k1, h1 := strs("a", 2000)
	if err := tab.Group([]*vec.Vector{k1}, h1, 2000, make([]uint32, 2000)); err != nil {
		t.Fatal(err)
	}
	slots := tab.Slots()
	var out int64 // the keys' charge, handed on with them
	for _, tc := range []struct {
		hint  int
		reuse bool
	}{{500, true}, {slots, false}} {
		old := &tab.slots[0]
		out += tab.KeyBytes()
		if err := tab.restart(tc.hint); err != nil {
			t.Fatal(err)
		}
		if got := &tab.slots[0] == old; got != tc.reuse {
			t.Errorf("hint %d: kept its slots: %v, want %v", tc.hint, got, tc.reuse)
		}
		if got := b.Used() - out; got != int64(tab.Slots())*16 {
			t.Errorf("hint %d: charged %d bytes for %d slots", tc.hint, got, tab.Slots())
		}
		// The old table's keys again, and new ones: all new groups.
		k2, h2 := strs("a", 400)
		gids := make([]uint32, 400)
		if err := tab.Group([]*vec.Vector{k2}, h2, 400, gids); err != nil {
			t.Fatal(err)
		}
		if tab.Len() != 200 || gids[0] != 0 || gids[200] != 0 || gids[199] != 199 {
			t.Errorf("hint %d: %d groups, gids %d %d %d; want 200, 0 0 199", tc.hint, tab.Len(), gids[0], gids[200], gids[199])
		}
	}
}

// TestCountRadixGivesBack: the tuned count path's tables, reset from one
// partition to the next (smaller and larger), give back all they charged.
func TestCountRadixGivesBack(t *testing.T) {
	const rows = 60000
	keys := vec.NewVector(vec.Int64, rows)
	for i := range rows {
		// Partitions with very different group counts: most keys repeat
		// a few values, a stretch is all distinct.
		k := int64(i % 7)
		if i%3 == 0 {
			k = int64(i)
		}
		keys.AppendInt(k)
	}
	for _, threads := range []int{1, 2} {
		b := &Budget{}
		cfg := Config{Strategy: Radix, Threads: threads, RadixBits: 3, Budget: b, RowsHint: rows}
		out, err := Aggregate(t.Context(), []vec.Type{vec.Int64}, []Spec{{Kind: CountStar}}, cfg, source([]*vec.Vector{keys}, keys, 1000, 1))
		if err != nil {
			t.Fatal(err)
		}
		if out.Groups != rows/3+4 { // 0, 3 and 6 are in both sets
			t.Errorf("%d threads: %d groups, want %d", threads, out.Groups, rows/3+4)
		}
		if got := b.Used(); got != 0 {
			t.Errorf("%d threads: %d bytes still charged", threads, got)
		}
	}
}
