package cachesim

import "testing"

// TestCoherenceCounters runs two cores incrementing their own counters,
// alternately, with the counters 8 and 64 bytes apart: packed, every
// increment takes the line from the other core; padded, none does.
func TestCoherenceCounters(t *testing.T) {
	tests := []struct {
		name          string
		stride        uint64
		atomic        bool
		wantTransfers int64 // per write, after the first round
		wantStates    [2]MESI
	}{
		{"packed atomic", 8, true, 1, [2]MESI{Invalid, Modified}},
		{"packed plain", 8, false, 1, [2]MESI{Invalid, Modified}},
		{"padded atomic", 64, true, 0, [2]MESI{Modified, Modified}},
		{"padded plain", 64, false, 0, [2]MESI{Modified, Modified}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCoherence(2, 64)
			if err != nil {
				t.Fatal(err)
			}
			const n = 1000
			inc := func(core int) {
				a := uint64(core) * tt.stride
				if !tt.atomic {
					c.Read(core, a)
				}
				c.Write(core, a)
			}
			inc(0)
			inc(1)
			before := c.Stats()
			for range n {
				inc(0)
				inc(1)
			}
			s := c.Stats()
			got := float64(s.Transfers-before.Transfers) / (2 * n)
			if got != float64(tt.wantTransfers) {
				t.Errorf("transfers per write %.2f, want %d (stats %+v)", got, tt.wantTransfers, s)
			}
			if tt.stride == 8 && s.Invalidations-before.Invalidations < 2*n {
				t.Errorf("packed: %d invalidations in %d writes, want one each", s.Invalidations-before.Invalidations, 2*n)
			}
			for core, want := range tt.wantStates {
				if got := c.State(core, uint64(core)*tt.stride); got != want {
					t.Errorf("core %d ends in %v, want %v", core, got, want)
				}
			}
		})
	}
}

// TestCoherenceReadShares checks the read path: a second reader shares a
// clean line without a transfer, a reader of a Modified line gets it from
// the owner, and a write to a Shared copy is an upgrade.
func TestCoherenceReadShares(t *testing.T) {
	c, _ := NewCoherence(2, 64)
	c.Read(0, 0)
	if c.State(0, 0) != Exclusive || c.Stats().Fills != 1 {
		t.Fatalf("first read: %v, %+v", c.State(0, 0), c.Stats())
	}
	c.Read(1, 8)
	if c.State(0, 0) != Shared || c.State(1, 0) != Shared {
		t.Fatalf("second reader: %v %v", c.State(0, 0), c.State(1, 0))
	}
	c.Write(1, 0)
	s := c.Stats()
	if s.Upgrades != 1 || c.State(0, 0) != Invalid || c.State(1, 0) != Modified {
		t.Fatalf("upgrade: %v %v %+v", c.State(0, 0), c.State(1, 0), s)
	}
	c.Read(0, 0)
	if got := c.Stats().Transfers - s.Transfers; got != 1 {
		t.Fatalf("read of a Modified line: %d transfers, want 1", got)
	}
	if _, err := NewCoherence(2, 48); err == nil {
		t.Error("line size 48 accepted")
	}
}
