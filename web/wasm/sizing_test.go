package main

import "testing"

// TestHitsRows: the rows fit the memory by the generator's measured
// footprint, whole millions from a million on, within the bounds.
func TestHitsRows(t *testing.T) {
	for _, tt := range []struct {
		memory int64
		want   int
	}{
		{0, 100_000},
		{hitsGenFixed + 50_000*hitsGenPerRow, 100_000},
		{hitsGenFixed + 700_000*hitsGenPerRow, 700_000},
		{hitsGenFixed + 1_999_999*hitsGenPerRow, 1_000_000},
		{hitsGenFixed + 4_500_000*hitsGenPerRow, 4_000_000},
		{1 << 50, MaxRows},
	} {
		if got := HitsRows(tt.memory); got != tt.want {
			t.Errorf("HitsRows(%d) = %d, want %d", tt.memory, got, tt.want)
		}
	}
	for m := int64(hitsGenFixed); m < 4<<30; m += 37 << 20 {
		if r := HitsRows(m); r > 100_000 && hitsGenFixed+int64(r)*hitsGenPerRow > m {
			t.Fatalf("HitsRows(%d) = %d rows, which need %d bytes", m, r, hitsGenFixed+int64(r)*hitsGenPerRow)
		}
	}
	if got := DefaultRows(); got < 1_000_000 || got > MaxDefaultRows {
		t.Errorf("DefaultRows() = %d, want 1 M to %d", got, MaxDefaultRows)
	}
}
