package storage

import (
	"context"
	"fmt"
	"testing"

	"cachebook/engine/vec"
)

// TestColumnStreamNextEq compares every integer column of every row group
// with constants, in steps that start and end inside pages, skips between
// them: the rows NextEq finds are those whole-chunk decoding holds the
// constant in, on PLAIN pages (compared where they lie), dictionary pages
// and pages with NULLs (converted first). A column whose stored integers
// are not its values, and one served from memory, are refused without a
// row read.
func TestColumnStreamNextEq(t *testing.T) {
	data := writeAllTypes(t, 3000) // 3 row groups, pages of 2 KiB
	tb, all, rd := wholeAndReader(t, memCatalog(t, "t", data, 0), "t")
	ctx := context.Background()
	compared := map[string]bool{ // the columns NextEq compares
		"I8": true, "I16": true, "I32": true, "I64": true, "U64": true, "TsMicro": true, "TsNano": true, "DictI64": true, "Date": true, "OptI32": true,
	}
	steps := []int{7, 300, 1, 185, 200, 307}
	for g, b := range all {
		for j, col := range tb.Columns {
			whole := b.Vecs[j]
			for _, fromMemory := range []bool{false, true} {
				st, err := rd.Stream(ctx, g, j)
				if err != nil {
					t.Fatal(err)
				}
				if fromMemory {
					st = StreamOf(whole)
				}
				pos := 0
				for i, n := range steps {
					if i%3 == 2 { // skipped
						if err := st.Skip(ctx, n); err != nil {
							t.Fatal(err)
						}
						pos += n
						continue
					}
					n = min(n, whole.Len-pos)
					// A value the step holds, at its middle row, and
					// one no row holds.
					for _, k := range []int64{intAt(whole, pos+n/2), -987654321} {
						name := fmt.Sprintf("%s row group %d rows %d+%d = %d (from memory %v)", col.Name, g, pos, n, k, fromMemory)
						sel, ok, err := st.NextEq(ctx, n, k)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if ok != (compared[col.Name] && !fromMemory) {
							t.Fatalf("%s: compared %v", name, ok)
						}
						if !ok {
							continue
						}
						var want []int32
						for r := range n {
							if !whole.IsNull(pos+r) && whole.Type != vec.String && !whole.Type.IsFloat() && whole.I64[pos+r] == k {
								want = append(want, int32(r))
							}
						}
						if fmt.Sprint(sel) != fmt.Sprint(want) {
							t.Fatalf("%s: rows %v, want %v", name, sel, want)
						}
						// NextEq read the rows: step back for the
						// second constant by reopening at pos.
						if st, err = rd.Stream(ctx, g, j); err != nil {
							t.Fatal(err)
						}
						if err := st.Skip(ctx, pos); err != nil {
							t.Fatal(err)
						}
					}
					if err := st.Skip(ctx, n); err != nil {
						t.Fatal(err)
					}
					pos += n
				}
				st.Close()
			}
		}
	}
}

// intAt returns row r of the integer vector v, or 0.
func intAt(v *vec.Vector, r int) int64 {
	if v.Type == vec.String || v.Type.IsFloat() || v.IsNull(r) || r >= v.Len {
		return 0
	}
	return v.I64[r]
}
