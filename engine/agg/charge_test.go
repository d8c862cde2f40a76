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
