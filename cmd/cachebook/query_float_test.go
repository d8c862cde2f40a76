package main

import (
	"math"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/engine/vec"
)

// TestWriteFloat32 checks that FLOAT values are printed from their single
// precision: 3.14, not 3.140000104904175, in every output format.
func TestWriteFloat32(t *testing.T) {
	v := vec.NewVector(vec.Float32, 3)
	v.AppendFloat(3.14)
	v.AppendFloat(math.Inf(1))
	v.AppendNull()
	r := &engine.Result{Columns: []vec.Column{{Name: "x", Type: vec.Float32}}, Vecs: []*vec.Vector{v}, Rows: 3}
	for _, tc := range []struct{ format, want string }{
		{"json", `"columns":[{"name":"x","type":"FLOAT"}],"rows":[[3.14],["inf"],[null]]`},
		{"tsv", "x\n3.14\ninf\n\\N\n"},
		{"table", "3.14"},
	} {
		var b strings.Builder
		if err := writeResult(&b, r, tc.format); err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), "3.1400001") {
			t.Errorf("%s output %q, want it to contain %q", tc.format, b.String(), tc.want)
		}
	}
}
