package agg

import (
	"slices"
	"testing"
)

func TestGrowNoZero(t *testing.T) {
	tests := []struct {
		name string
		in   []int64
		n    int
	}{
		{"nil", nil, 5},
		{"room already", make([]int64, 2, 8), 3},
		{"grows past", []int64{1, 2, 3}, 1000},
		{"no room asked", []int64{4}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Clone(tt.in)
			got := growNoZero(tt.in, tt.n)
			if !slices.Equal(got, want) {
				t.Errorf("contents %v, want %v", got, want)
			}
			if cap(got)-len(got) < tt.n {
				t.Errorf("room for %d more, want %d", cap(got)-len(got), tt.n)
			}
			if cap(tt.in)-len(tt.in) >= tt.n && cap(tt.in) > 0 && &got[:1][0] != &tt.in[:1][0] {
				t.Errorf("moved a slice that had room")
			}
		})
	}
	b := growNoZero([]byte("ab"), 1<<20)
	if string(b) != "ab" || cap(b) < 2+1<<20 {
		t.Errorf("bytes: %q, cap %d", b, cap(b))
	}
}

// TestExtendZeroes checks that extend zeroes the entries it adds, both
// where the array had room (and old values past its length) and where it
// takes a new array, whose memory is not zeroed for it.
func TestExtendZeroes(t *testing.T) {
	a := []int64{1, 2, 3, 4}
	a = a[:1]
	if got := extend(a, 3, 4); !slices.Equal(got, []int64{1, 0, 0}) {
		t.Errorf("within capacity: %v, want [1 0 0]", got)
	}
	for range 50 {
		// Arrays freed by the collector and handed out again hold old
		// values: fill some, drop them, and extend fresh ones.
		junk := growNoZero([]int64(nil), 4096)[:4096]
		for i := range junk {
			junk[i] = -1
		}
		f := extend([]float64{7}, 4096, 4096)
		if f[0] != 7 {
			t.Fatalf("lost the first entry: %v", f[0])
		}
		for i, x := range f[1:] {
			if x != 0 {
				t.Fatalf("entry %d is %v, want 0", i+1, x)
			}
		}
	}
}
