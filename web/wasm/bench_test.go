package main

import (
	"context"
	"fmt"
	"testing"

	"cachebook/engine/gen"
)

// q15 is ClickBench Q15 wrapped in a count, as bench.mjs runs it.
const q15 = "SELECT count(*) AS groups, sum(c) AS rows FROM (SELECT UserID, count(*) AS c FROM hits GROUP BY UserID) AS t"

// BenchmarkQ15 runs Q15 natively on the browser's engine configuration
// (one thread, the same generated table) for comparison with bench.mjs.
func BenchmarkQ15(b *testing.B) {
	for _, rows := range []int{1_000_000} {
		db, _, err := newTable(gen.Options{Rows: rows, Order: "shuffled", Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, strategy := range []string{"naive", "radix"} {
			b.Run(fmt.Sprintf("rows=%d/%s", rows, strategy), func(b *testing.B) {
				s := db.NewSession()
				if err := s.Set("group_by", strategy); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Exec(context.Background(), q15, nil); err != nil { // warm the column cache
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					if _, err := s.Exec(context.Background(), q15, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
