package cachesim

import "testing"

// TestLoadMisses: the load-only counts are the misses of loads, never of
// stores, for streams of loads, of stores and of both, with and without
// set sampling.
func TestLoadMisses(t *testing.T) {
	const lines = 1 << 16 // 4 MiB: past every cache of the default geometry
	tests := []struct {
		name          string
		load, store   bool
		sampling      Sampling
		wantLoadShare float64 // of the L1 misses
	}{
		{"loads", true, false, Sampling{}, 1},
		{"stores", false, true, Sampling{}, 0},
		{"load then store each line", true, true, Sampling{}, 1},
		{"loads, set sampling", true, false, Sampling{Mod: 16, Keep: 1}, 1},
		{"loads, time sampling", true, false, Sampling{Every: 4}, 1},
	}
	for _, tt := range tests {
		g := DefaultGeometry()
		s, err := New(g, tt.sampling)
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint64(lines) {
			addr := 1<<30 + i*uint64(g.LineSize)
			if tt.load {
				s.Load(addr, 8)
			}
			if tt.store {
				s.Store(addr, 8)
			}
		}
		st := s.Stats()
		if st.L1.Misses == 0 || st.DRAMReads == 0 {
			t.Fatalf("%s: no misses: %+v", tt.name, st)
		}
		share := float64(st.L1LoadMisses) / float64(st.L1.Misses)
		if share < tt.wantLoadShare-0.05 || share > tt.wantLoadShare+0.05 {
			t.Errorf("%s: L1 load misses %d of %d, want a share of %.0f%%", tt.name, st.L1LoadMisses, st.L1.Misses, 100*tt.wantLoadShare)
		}
		if d := float64(st.DRAMLoadReads) / float64(st.DRAMReads); d < tt.wantLoadShare-0.05 || d > tt.wantLoadShare+0.05 {
			t.Errorf("%s: DRAM reads by loads %d of %d, want a share of %.0f%%", tt.name, st.DRAMLoadReads, st.DRAMReads, 100*tt.wantLoadShare)
		}
	}
}
