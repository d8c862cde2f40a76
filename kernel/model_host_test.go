package kernel

import (
	"strings"
	"testing"
)

func TestHostGeometry(t *testing.T) {
	g, src := HostGeometry()
	if err := g.Validate(); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	t.Logf("%s (%s)", g, src)
	if src == "" {
		t.Error("no source")
	}
	for _, tc := range []struct {
		size     int64
		ways     int
		wantWays int
		rounded  bool
	}{
		{48 << 10, 12, 12, false},
		{32 << 10, 12, 16, false}, // 12 ways do not give a power of two of sets; 16 do
		{1280 << 10, 16, 20, false},
		{480 << 20, 16, 15, false}, // 15 ways give 2^19 sets
		{100 << 20, 16, 16, true},  // no way count gives a power of two: rounded down
	} {
		l, note := fitLevel(tc.size, tc.ways, 64)
		if l.Ways != tc.wantWays || (note != "") != tc.rounded || (!tc.rounded && l.Size != tc.size) {
			t.Errorf("fitLevel(%d, %d) = %+v %q", tc.size, tc.ways, l, note)
		}
		if tc.rounded && !strings.Contains(note, "modelled as") {
			t.Errorf("note %q", note)
		}
	}
}
