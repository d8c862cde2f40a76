package vec

import (
	"strings"
	"testing"
)

func strs(v *Vector) string {
	var out []string
	for i := 0; i < v.Len; i++ {
		out = append(out, v.Format(i))
	}
	return strings.Join(out, ",")
}

// samples returns the test vectors: strings "a", "bb", "", "ccc", NULL;
// integers 1, NULL, -3; floats 0.5, 1/3.
func samples() (s, n, f *Vector) {
	s = NewVector(String, 0)
	for _, x := range []string{"a", "bb", "", "ccc"} {
		s.AppendStr([]byte(x))
	}
	s.AppendNull()
	n = NewVector(Int64, 0)
	n.AppendInt(1)
	n.AppendNull()
	n.AppendInt(-3)
	f = NewVector(Float64, 0)
	f.AppendFloat(0.5)
	f.AppendFloat(1.0 / 3)
	return s, n, f
}

func TestOps(t *testing.T) {
	s, n, f := samples()
	tests := []struct {
		name string
		got  *Vector
		want string
	}{
		{"slice strings", s.Slice(1, 4), "bb,,ccc"},
		{"slice keeps nulls", s.Slice(3, 5), "ccc,NULL"},
		{"gather", s.Gather([]int32{4, 0, 3}), "NULL,a,ccc"},
		{"gather ints", n.Gather([]int32{2, 1}), "-3,NULL"},
		{"floats", f, "0.5,0.333333"},
	}
	for _, tc := range tests {
		if got := strs(tc.got); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	dst := NewVector(String, 0)
	dst.AppendStr([]byte("x"))
	dst.AppendVector(s.Slice(1, 5))
	dst.AppendVector(s.Slice(0, 1))
	if got := strs(dst); got != "x,bb,,ccc,NULL,a" {
		t.Errorf("AppendVector: %q", got)
	}
	i := NewVector(Int64, 0)
	i.AppendVector(n)
	i.AppendVector(n.Slice(0, 1))
	if got := strs(i); got != "1,NULL,-3,1" || i.Valid == nil || len(i.Valid) != 4 {
		t.Errorf("AppendVector ints: %q valid %v", got, i.Valid)
	}
}

// TestConcat: Concat joins views (string offsets not starting at zero),
// nullable and non-nullable parts and empty ones, with arrays sized once.
func TestConcat(t *testing.T) {
	s, n, f := samples()
	plain := NewVector(Int64, 0)
	plain.AppendInt(7)
	tests := []struct {
		name  string
		t     Type
		parts []*Vector
		want  string
	}{
		{"strings", String, []*Vector{s.Slice(1, 3), s.Slice(3, 5), s.Slice(0, 1)}, "bb,,ccc,NULL,a"},
		{"strings without NULLs", String, []*Vector{s.Slice(2, 4), s.Slice(0, 2)}, ",ccc,a,bb"},
		{"empty parts", String, []*Vector{s.Slice(2, 2), s.Slice(0, 1), NewVector(String, 0)}, "a"},
		{"ints, NULLs in one part", Int64, []*Vector{plain, n, plain}, "7,1,NULL,-3,7"},
		{"floats", Float64, []*Vector{f.Slice(0, 1), f.Slice(0, 0), f}, "0.5,0.5,0.333333"},
		{"nothing", Int64, nil, ""},
	}
	for _, tc := range tests {
		v, err := Concat(tc.t, tc.parts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strs(v); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		nullable := false // validity is kept when a part has it
		for _, p := range tc.parts {
			nullable = nullable || p.Valid != nil
		}
		if nullable != (v.Valid != nil) || v.Valid != nil && len(v.Valid) != v.Len {
			t.Errorf("%s: %d rows, validity %v", tc.name, v.Len, v.Valid)
		}
		if c := cap(v.I64) + cap(v.F64) + cap(v.Offsets) - 1; tc.t != String && c+1 != v.Len || tc.t == String && c != v.Len {
			t.Errorf("%s: arrays sized for %d rows, hold %d", tc.name, c, v.Len)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    *Vector
		want string
	}{
		{&Vector{Type: Date, Len: 1, I64: []int64{15887}}, "2013-07-01"},
		{&Vector{Type: Timestamp, Len: 1, I64: []int64{1372636800_000000 + 61_000000}}, "2013-07-01 00:01:01"},
		{&Vector{Type: UInt64, Len: 1, I64: []int64{-1}}, "18446744073709551615"},
		{&Vector{Type: Bool, Len: 1, I64: []int64{1}}, "true"},
		{&Vector{Type: Float64, Len: 1, F64: []float64{1e21}}, "1e+21"},
	} {
		if got := tc.v.Format(0); got != tc.want {
			t.Errorf("%s: got %q want %q", tc.v.Type, got, tc.want)
		}
	}
}

func TestFloat32Vector(t *testing.T) {
	if !Float32.IsFloat() || !Float64.IsFloat() || Int64.IsFloat() || !Float32.IsNumeric() || Float32.IsInteger() {
		t.Error("Float32 classification")
	}
	if Float32.String() != "FLOAT" {
		t.Errorf("Float32.String() = %s", Float32)
	}
	v := NewVector(Float32, 4)
	v.AppendFloat(3.14) // rounded to single precision
	v.AppendNull()
	v.AppendFloat(1.1)
	if v.F64 == nil || v.I64 != nil || v.F64[0] != float64(float32(3.14)) {
		t.Fatalf("stored %v / %v", v.F64, v.I64)
	}
	w := NewVector(Float32, 0)
	w.AppendVector(v.Gather([]int32{2, 1, 0}).Slice(0, 3))
	w.AppendFrom(v, 0)
	var got []string
	for i := 0; i < w.Len; i++ {
		got = append(got, w.Format(i))
	}
	if s := strings.Join(got, "|"); s != "1.1|NULL|3.14|3.14" {
		t.Errorf("formatted %s", s)
	}
	if x, ok := w.Value(0).(float32); !ok || x != 1.1 {
		t.Errorf("Value(0) = %v (%T), want float32 1.1", w.Value(0), w.Value(0))
	}
}
