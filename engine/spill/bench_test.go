//go:build !js

package spill

import (
	"testing"

	"cachebook/engine/vec"
)

// BenchmarkAppendSmallChunks appends chunks of a few rows to 256 files,
// as a radix GROUP BY with many partitions spills: the cost per chunk,
// apart from the bytes, is what it measures.
func BenchmarkAppendSmallChunks(b *testing.B) {
	for _, rows := range []int{64, 4096} {
		b.Run(map[int]string{64: "64rows", 4096: "4096rows"}[rows], func(b *testing.B) {
			s, err := Open(b.TempDir(), 0)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			files := make([]*File, 256)
			for i := range files {
				if files[i], err = s.Create(); err != nil {
					b.Fatal(err)
				}
			}
			h := vec.NewVector(vec.Int64, rows)
			for i := range rows {
				h.AppendInt(int64(i))
			}
			cols := []*vec.Vector{h, h, h}
			b.SetBytes(chunkBytes(cols))
			b.ResetTimer()
			for i := range b.N {
				if err := files[i%len(files)].Append(cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
