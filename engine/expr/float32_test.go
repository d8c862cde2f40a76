package expr

import (
	"math"
	"strings"
	"testing"

	"cachebook/engine/vec"
)

// floatBatch is a 5-row batch with a FLOAT column r, a DOUBLE d, an
// INTEGER i and a UBIGINT u.
func floatBatch() ([]vec.Column, *vec.Batch) {
	cols := []vec.Column{
		{Name: "r", Type: vec.Float32},
		{Name: "d", Type: vec.Float64},
		{Name: "i", Type: vec.Int32},
		{Name: "u", Type: vec.UInt64},
	}
	r := vec.NewVector(vec.Float32, 5)
	for _, x := range []float64{1.1, math.NaN(), 3.4e38, -2.5, 0.1} {
		r.AppendFloat(x) // rounded to float32
	}
	r.Valid = []bool{true, false, true, true, true}
	r.F64[1] = 0
	d := vec.NewVector(vec.Float64, 5)
	for _, x := range []float64{1.1, 2, 0.5, -0.0, 0.1} {
		d.AppendFloat(x)
	}
	i := vec.NewVector(vec.Int32, 5)
	for _, x := range []int64{3, 16777217, 3, 0, -1} {
		i.AppendInt(x)
	}
	u := vec.NewVector(vec.UInt64, 5)
	for _, x := range []uint64{1, 2, 3, 4, 1 << 63} {
		u.AppendInt(int64(x))
	}
	return cols, &vec.Batch{Vecs: []*vec.Vector{r, d, i, u}, Len: 5}
}

func evalFloat(t *testing.T, src string) (Expr, *vec.Vector, error) {
	t.Helper()
	cols, b := floatBatch()
	return evalOver(t, cols, b, src)
}

// TestFloat32 checks FLOAT's typing and single-precision results against
// DuckDB 1.5's answers (each checked there; CAST(… AS VARCHAR) shows every
// digit of the float32).
func TestFloat32(t *testing.T) {
	tests := []struct {
		src  string
		typ  vec.Type
		want string // rows joined by |; CAST(… AS VARCHAR) for exact digits
	}{
		{"CAST(r AS VARCHAR)", vec.String, "1.1|NULL|3.4e+38|-2.5|0.1"},
		{"typeof(r)", vec.String, "FLOAT|FLOAT|FLOAT|FLOAT|FLOAT"},
		// FLOAT with an integer: FLOAT, rounded (3.4e38 * 3 overflows).
		{"CAST(r * 3 AS VARCHAR)", vec.String, "3.3000002|NULL|inf|-7.5|0.3"},
		{"CAST(r * i AS VARCHAR)", vec.String, "3.3000002|NULL|inf|-0.0|-0.1"},
		{"CAST(3.4e38::FLOAT * 3 AS VARCHAR)", vec.String, "inf|inf|inf|inf|inf"},
		{"CAST(r + i AS VARCHAR)", vec.String, "4.1|NULL|3.4e+38|-2.5|-0.9"},
		{"r + i", vec.Float32, "4.1|NULL|3.4e+38|-2.5|-0.9"},
		{"CAST(i AS FLOAT) = i", vec.Bool, "true|true|true|true|true"}, // compared as FLOAT
		{"CAST(i AS FLOAT)::BIGINT", vec.Int64, "3|16777216|3|0|-1"},
		{"r * u", vec.Float32, "1.1|NULL|inf|-10|9.22337e+17"},
		{"CAST(r / 3 AS VARCHAR)", vec.String, "0.36666667|NULL|1.1333333e+38|-0.8333333|0.033333335"},
		{"CAST(r // 2 AS VARCHAR)", vec.String, "0.55|NULL|1.7e+38|-1.25|0.05"},
		{"r % 2", vec.Float32, "1.1|NULL|0|-0.5|0.1"},
		{"CAST(r - 1 AS VARCHAR)", vec.String, "0.100000024|NULL|3.4e+38|-3.5|-0.9"},
		// A decimal literal becomes FLOAT, one with an exponent is DOUBLE.
		{"CAST(r * 1.1 AS VARCHAR)", vec.String, "1.21|NULL|inf|-2.75|0.11000001"},
		{"typeof(r * 1.1)", vec.String, "FLOAT|FLOAT|FLOAT|FLOAT|FLOAT"},
		{"CAST(1.1::FLOAT * 1.1e0 AS VARCHAR)", vec.String, "1.2100000262260437|1.2100000262260437|1.2100000262260437|1.2100000262260437|1.2100000262260437"},
		{"typeof(r * 1.1e0)", vec.String, "DOUBLE|DOUBLE|DOUBLE|DOUBLE|DOUBLE"},
		// FLOAT with DOUBLE: DOUBLE, the float32 widened exactly.
		{"typeof(r + d)", vec.String, "DOUBLE|DOUBLE|DOUBLE|DOUBLE|DOUBLE"},
		{"CAST(r + d AS VARCHAR)", vec.String, "2.200000023841858|NULL|3.3999999521443642e+38|-2.5|0.20000000149011612"},
		// Comparisons: with a decimal literal in FLOAT, with DOUBLE in DOUBLE.
		{"r = 0.1", vec.Bool, "false|NULL|false|false|true"},
		{"r = d", vec.Bool, "false|NULL|false|false|false"},
		{"r IN (1.1, 0.1)", vec.Bool, "true|NULL|false|false|true"},
		{"r IN (1e300)", vec.Bool, "false|NULL|false|false|false"},
		{"r > 1e300", vec.Bool, "false|NULL|false|false|false"},
		// Unary functions keep FLOAT.
		{"-r", vec.Float32, "-1.1|NULL|-3.4e+38|2.5|-0.1"},
		{"abs(r)", vec.Float32, "1.1|NULL|3.4e+38|2.5|0.1"},
		{"floor(r)", vec.Float32, "1|NULL|3.4e+38|-3|0"},
		{"ceil(r)", vec.Float32, "2|NULL|3.4e+38|-2|1"},
		{"CAST(round(r, 1) AS VARCHAR)", vec.String, "1.1|NULL|3.4e+38|-2.5|0.1"},
		{"CAST(round(1.15::FLOAT, 1) AS VARCHAR)", vec.String, "1.1|1.1|1.1|1.1|1.1"},
		{"coalesce(r, 1.5)", vec.Float32, "1.1|1.5|3.4e+38|-2.5|0.1"},
		{"coalesce(r, 1)", vec.Float32, "1.1|1|3.4e+38|-2.5|0.1"},
		{"coalesce(r, d)", vec.Float64, "1.1|2|3.4e+38|-2.5|0.1"},
		{"CASE WHEN i = 3 THEN r ELSE 2.5 END", vec.Float32, "1.1|2.5|3.4e+38|2.5|2.5"},
		// Casts round; a finite DOUBLE beyond FLOAT's range is an error,
		// a string beyond it infinity.
		{"CAST(d AS FLOAT) = r", vec.Bool, "true|NULL|false|false|true"},
		{"CAST('1e39' AS FLOAT)", vec.Float32, "inf|inf|inf|inf|inf"},
		{"CAST('Infinity'::DOUBLE AS REAL)", vec.Float32, "inf|inf|inf|inf|inf"},
		{"CAST(3.14 AS FLOAT4)", vec.Float32, "3.14|3.14|3.14|3.14|3.14"},
		{"CAST(CAST(3.14 AS FLOAT) AS VARCHAR)", vec.String, "3.14|3.14|3.14|3.14|3.14"},
		{"CAST(CAST(123456789 AS FLOAT) AS VARCHAR)", vec.String, "123456790.0|123456790.0|123456790.0|123456790.0|123456790.0"},
		{"CAST(CAST(1e10 AS FLOAT) AS VARCHAR)", vec.String, "10000000000.0|10000000000.0|10000000000.0|10000000000.0|10000000000.0"},
		{"CAST(CAST(0.00001 AS FLOAT) AS VARCHAR)", vec.String, "1e-05|1e-05|1e-05|1e-05|1e-05"},
		{"CAST(CAST(r AS DOUBLE) AS VARCHAR)", vec.String, "1.100000023841858|NULL|3.3999999521443642e+38|-2.5|0.10000000149011612"},
	}
	for _, tt := range tests {
		e, v, err := evalFloat(t, tt.src)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if e.Type() != tt.typ || v.Type != tt.typ {
			t.Errorf("%s: type %s (vector %s), want %s", tt.src, e.Type(), v.Type, tt.typ)
		}
		if got := formatAll(v); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.src, got, tt.want)
		}
		if v.Type == vec.Float32 {
			for i, f := range v.F64[:v.Len] {
				if !math.IsNaN(f) && f != float64(float32(f)) {
					t.Errorf("%s row %d: %v is not a float32", tt.src, i, f)
				}
			}
		}
	}
}

func TestFloat32Errors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"CAST(1e39 AS FLOAT)", "out of range for FLOAT"},
		{"CAST(-1e300 AS REAL)", "out of range for FLOAT"},
		{"CAST(r AS BIGINT)", "out of range for BIGINT"}, // 3.4e38
	} {
		_, _, err := evalFloat(t, tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.src, err, tt.want)
		}
	}
}

// TestFloat32Format checks the text forms of FLOAT values: the table form
// as DOUBLE's (6 significant digits), VARCHAR the shortest float32.
func TestFloat32Format(t *testing.T) {
	v := vec.NewVector(vec.Float32, 4)
	for _, x := range []float64{3.14, 1.1, 1234567.1, math.Inf(-1)} {
		v.AppendFloat(x)
	}
	if got, want := formatAll(v), "3.14|1.1|1.23457e+06|-inf"; got != want {
		t.Errorf("Format = %s, want %s", got, want)
	}
	if got := v.Value(0); got != float32(3.14) {
		t.Errorf("Value = %v (%T), want float32 3.14", got, got)
	}
	s, err := CastVector(v, vec.String)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatAll(s), "3.14|1.1|1234567.1|-inf"; got != want {
		t.Errorf("CAST AS VARCHAR = %s, want %s", got, want)
	}
	if got := (&Const{V: v.Slice(0, 1)}).String(); got != "CAST(3.14 AS FLOAT)" {
		t.Errorf("Const.String = %s", got)
	}
}
