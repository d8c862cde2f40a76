// Package vec defines the in-memory columnar representation shared by every
// part of the engine: logical types, column vectors and batches of vectors.
//
// A Vector holds one column of up to a few million values in flat slices so
// that operators loop over plain Go slices, with no per-value interfaces or
// allocations. Integer-like types (BOOLEAN, the integer widths, DATE and
// TIMESTAMP) are stored widened to int64; DOUBLE and FLOAT as float64 (a
// FLOAT value is always exactly a float32); VARCHAR as one byte slice plus
// n+1 offsets.
package vec

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Type is a logical column type.
type Type uint8

// The logical types. Integer widths only matter for DESCRIBE output and for
// DuckDB-compatible overflow behaviour; values are stored as int64.
const (
	Null        Type = iota // the type of the NULL literal
	Bool                    // stored in I64 as 0 or 1
	Int16                   // SMALLINT
	Int32                   // INTEGER
	Int64                   // BIGINT
	UInt64                  // UBIGINT, stored bit-for-bit in I64
	Float64                 // DOUBLE
	String                  // VARCHAR
	Date                    // days since 1970-01-01, in I64
	Timestamp               // microseconds since 1970-01-01 00:00:00 UTC, in I64
	Interval                // microseconds, in I64 (only for date arithmetic)
	TimestampNS             // TIMESTAMP_NS: nanoseconds since 1970-01-01 00:00:00 UTC, in I64
	Float32                 // FLOAT (REAL): single precision, stored in F64, every value exactly a float32
)

var typeNames = [...]string{
	Null: "NULL", Bool: "BOOLEAN", Int16: "SMALLINT", Int32: "INTEGER", Int64: "BIGINT",
	UInt64: "UBIGINT", Float64: "DOUBLE", String: "VARCHAR", Date: "DATE", Timestamp: "TIMESTAMP",
	Interval: "INTERVAL", TimestampNS: "TIMESTAMP_NS", Float32: "FLOAT",
}

// String returns the SQL name of the type, as DuckDB spells it.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", t)
}

// IsInteger reports whether t is stored in I64 and compares as an integer.
func (t Type) IsInteger() bool {
	switch t {
	case Bool, Int16, Int32, Int64, UInt64, Date, Timestamp, Interval, TimestampNS:
		return true
	}
	return false
}

// IsFloat reports whether t is DOUBLE or FLOAT, the types stored in F64.
func (t Type) IsFloat() bool { return t == Float64 || t == Float32 }

// IsNumeric reports whether arithmetic is defined on t.
func (t Type) IsNumeric() bool {
	switch t {
	case Int16, Int32, Int64, UInt64, Float64, Float32, Bool:
		return true
	}
	return false
}

// Vector is one column of Len values of a single Type.
//
// Exactly one of I64, F64 or (Bytes, Offsets) is used, according to Type.
// Valid is nil when every value is non-NULL; otherwise Valid[i] is false for
// NULL values (the payload slot of a NULL is zero and must be ignored).
type Vector struct {
	Type    Type
	Len     int
	I64     []int64
	F64     []float64
	Bytes   []byte   // String: concatenated values
	Offsets []uint32 // String: value i is Bytes[Offsets[i]:Offsets[i+1]]; len Len+1
	Valid   []bool
}

// NewVector returns an empty vector of type t with capacity for n values.
func NewVector(t Type, n int) *Vector {
	v := &Vector{Type: t}
	switch {
	case t.IsFloat():
		v.F64 = make([]float64, 0, n)
	case t == String:
		v.Offsets = make([]uint32, 1, n+1)
	default:
		v.I64 = make([]int64, 0, n)
	}
	return v
}

// IsNull reports whether value i is NULL.
func (v *Vector) IsNull(i int) bool { return v.Type == Null || (v.Valid != nil && !v.Valid[i]) }

// Str returns value i of a String vector without copying.
func (v *Vector) Str(i int) []byte { return v.Bytes[v.Offsets[i]:v.Offsets[i+1]] }

// AppendInt appends an integer-like value.
func (v *Vector) AppendInt(x int64) {
	v.I64 = append(v.I64, x)
	if v.Valid != nil {
		v.Valid = append(v.Valid, true)
	}
	v.Len++
}

// AppendFloat appends a DOUBLE or FLOAT value; for FLOAT, x is rounded to
// single precision.
func (v *Vector) AppendFloat(x float64) {
	if v.Type == Float32 {
		x = float64(float32(x))
	}
	v.F64 = append(v.F64, x)
	if v.Valid != nil {
		v.Valid = append(v.Valid, true)
	}
	v.Len++
}

// AppendStr appends a VARCHAR value.
func (v *Vector) AppendStr(s []byte) {
	v.Bytes = append(v.Bytes, s...)
	v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
	if v.Valid != nil {
		v.Valid = append(v.Valid, true)
	}
	v.Len++
}

// AppendNull appends a NULL, materialising the validity slice if needed.
func (v *Vector) AppendNull() {
	if v.Valid == nil {
		v.Valid = make([]bool, v.Len, cap(v.I64)+cap(v.F64)+cap(v.Offsets)+1)
		for i := range v.Valid {
			v.Valid[i] = true
		}
	}
	switch {
	case v.Type.IsFloat():
		v.F64 = append(v.F64, 0)
	case v.Type == String:
		v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
	case v.Type != Null:
		v.I64 = append(v.I64, 0)
	}
	v.Valid = append(v.Valid, false)
	v.Len++
}

// AppendFrom appends value i of src, which must have the same Type.
func (v *Vector) AppendFrom(src *Vector, i int) {
	if src.IsNull(i) {
		v.AppendNull()
		return
	}
	switch {
	case v.Type.IsFloat():
		v.AppendFloat(src.F64[i])
	case v.Type == String:
		v.AppendStr(src.Str(i))
	default:
		v.AppendInt(src.I64[i])
	}
}

// Value returns value i as a Go value: nil, bool, int64, uint64, float64
// (DOUBLE), float32 (FLOAT), string, or time.Time (DATE and TIMESTAMP, UTC). It allocates and is meant
// for results and tests, not for hot loops.
func (v *Vector) Value(i int) any {
	if v.IsNull(i) {
		return nil
	}
	switch v.Type {
	case Bool:
		return v.I64[i] != 0
	case UInt64:
		return uint64(v.I64[i])
	case Float64:
		return v.F64[i]
	case Float32:
		return float32(v.F64[i])
	case String:
		return string(v.Str(i))
	case Date:
		return time.Unix(v.I64[i]*86400, 0).UTC()
	case Timestamp:
		return time.UnixMicro(v.I64[i]).UTC()
	case TimestampNS:
		return time.Unix(0, v.I64[i]).UTC()
	default:
		return v.I64[i]
	}
}

// Format renders value i as text the way DuckDB's CLI and our tsv output do:
// NULL as "NULL", integers exactly, doubles and floats with up to 6
// significant digits,
// dates as YYYY-MM-DD and timestamps as YYYY-MM-DD HH:MM:SS (UTC).
func (v *Vector) Format(i int) string {
	if v.IsNull(i) {
		return "NULL"
	}
	switch v.Type {
	case Bool:
		if v.I64[i] != 0 {
			return "true"
		}
		return "false"
	case UInt64:
		return strconv.FormatUint(uint64(v.I64[i]), 10)
	case Float64:
		return FormatFloat(v.F64[i])
	case Float32:
		return FormatFloat32(v.F64[i])
	case String:
		return string(v.Str(i))
	case Date:
		return time.Unix(v.I64[i]*86400, 0).UTC().Format("2006-01-02")
	case Timestamp:
		return time.UnixMicro(v.I64[i]).UTC().Format("2006-01-02 15:04:05")
	case TimestampNS:
		return time.Unix(0, v.I64[i]).UTC().Format("2006-01-02 15:04:05")
	case Interval:
		return (time.Duration(v.I64[i]) * time.Microsecond).String()
	default:
		return strconv.FormatInt(v.I64[i], 10)
	}
}

// FormatFloat renders a double with 6 significant digits, integers without a
// fraction, as psql-like tools and our tsv format do.
func FormatFloat(f float64) string { return formatFloat(f, 64) }

// FormatFloat32 renders a FLOAT as FormatFloat renders a double (6
// significant digits), rounding from its single-precision value, so that
// 3.14::FLOAT prints 3.14.
func FormatFloat32(f float64) string { return formatFloat(float64(float32(f)), 32) }

func formatFloat(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, bitSize)
}

// CompareFloat orders doubles as DuckDB does, for comparisons, sorting,
// MIN/MAX and grouping alike: NaN equals NaN and is greater than every
// other value (+Infinity included), and -0.0 equals 0.0. It returns -1, 0
// or +1.
func CompareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	// At least one is NaN.
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	}
	return -1
}

// Batch is a set of equally long vectors: a horizontal slice of a table or of
// an intermediate result.
type Batch struct {
	Vecs []*Vector
	Len  int
}

// Column describes one column of a schema.
type Column struct {
	Name string
	Type Type
	// Err, when not nil, says why the column cannot be read (for example a
	// Parquet type the engine does not support); its Type is then Null.
	// Queries that do not use the column are unaffected; binding a
	// reference to it fails with Err.
	Err error
}
