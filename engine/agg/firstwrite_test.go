package agg

import "testing"

func TestFirstWriteOnePerPage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int // int64s
		wrote int // elements firstWrite stores into
	}{
		{"below the minimum", firstWriteMin/8 - 1, 0},
		{"at the minimum", firstWriteMin / 8, firstWriteMin / 4096},
		{"a partial last page", firstWriteMin/8 + 1, firstWriteMin/4096 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Marked values show which elements firstWrite stored into.
			s := make([]int64, tc.n)
			for i := range s {
				s[i] = -1
			}
			firstWrite(s)
			wrote := 0
			for i, v := range s {
				if v == 0 {
					wrote++
					if i%(4096/8) != 0 {
						t.Fatalf("stored into element %d, not the first of its page", i)
					}
				}
			}
			if wrote != tc.wrote {
				t.Errorf("stored into %d elements, want %d", wrote, tc.wrote)
			}
		})
	}
}
