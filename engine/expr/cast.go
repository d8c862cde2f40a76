package expr

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// TypeByName maps a SQL type name (any case, parameters such as
// VARCHAR(255) ignored) to a vec.Type. FLOAT, FLOAT4 and REAL are FLOAT
// (single precision), as in DuckDB. DECIMAL and NUMERIC map to DOUBLE,
// TINYINT to SMALLINT: the engine has no exact decimals or 8-bit integers.
func TypeByName(name string) (vec.Type, bool) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if i := strings.IndexByte(n, '('); i >= 0 {
		n = strings.TrimSpace(n[:i])
	}
	switch n {
	case "BOOLEAN", "BOOL", "LOGICAL":
		return vec.Bool, true
	case "TINYINT", "INT1", "SMALLINT", "INT2", "SHORT", "INT16":
		return vec.Int16, true
	case "INTEGER", "INT", "INT4", "INT32", "SIGNED":
		return vec.Int32, true
	case "BIGINT", "INT8", "INT64", "LONG":
		return vec.Int64, true
	case "UBIGINT", "UINT64":
		return vec.UInt64, true
	case "DOUBLE", "DOUBLE PRECISION", "FLOAT8", "DECIMAL", "NUMERIC", "FLOAT64":
		return vec.Float64, true
	case "FLOAT", "FLOAT4", "REAL", "FLOAT32":
		return vec.Float32, true
	case "VARCHAR", "TEXT", "STRING", "CHAR", "BPCHAR", "NVARCHAR":
		return vec.String, true
	case "DATE":
		return vec.Date, true
	case "TIMESTAMP", "DATETIME", "TIMESTAMP_US":
		return vec.Timestamp, true
	case "TIMESTAMP_NS":
		return vec.TimestampNS, true
	case "INTERVAL":
		return vec.Interval, true
	}
	return 0, false
}

// cast converts its operand to type to.
type cast struct {
	x   Expr
	to  vec.Type
	pos sql.Pos
}

func (c *cast) Type() vec.Type         { return c.to }
func (c *cast) children() []Expr       { return []Expr{c.x} }
func (c *cast) setChild(_ int, e Expr) { c.x = e }
func (c *cast) String() string         { return "CAST(" + c.x.String() + " AS " + c.to.String() + ")" }

func (c *cast) Eval(b *vec.Batch) (*vec.Vector, error) {
	v, err := c.x.Eval(b)
	if err != nil {
		return nil, err
	}
	out, err := CastVector(v, c.to)
	if err != nil {
		return nil, &sql.Error{Pos: c.pos, Msg: err.Error(), Err: err}
	}
	return out, nil
}

// canCast reports whether CastVector supports from → to.
func canCast(from, to vec.Type) bool {
	if from == to || from == vec.Null || to == vec.String || from == vec.String {
		return to != vec.Null
	}
	num := func(t vec.Type) bool { return t.IsNumeric() }
	switch {
	case num(from) && num(to):
		return true
	case isTemporal(from) && isTemporal(to):
		return true
	}
	return false
}

// isTemporal reports whether t is DATE, TIMESTAMP or TIMESTAMP_NS.
func isTemporal(t vec.Type) bool { return t == vec.Date || t == vec.Timestamp || t == vec.TimestampNS }

// intRange is the range of an integer type.
func intRange(t vec.Type) (lo, hi int64) {
	switch t {
	case vec.Bool:
		return 0, 1
	case vec.Int16:
		return math.MinInt16, math.MaxInt16
	case vec.Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// widens reports whether every value of the integer type from is a value
// of the integer type to, stored the same way in I64, so that a cast from
// → to changes only the label: BOOLEAN, SMALLINT and INTEGER to a wider
// signed type, BOOLEAN to UBIGINT.
func widens(from, to vec.Type) bool {
	switch to {
	case vec.Int16:
		return from == vec.Bool
	case vec.Int32:
		return from == vec.Bool || from == vec.Int16
	case vec.Int64:
		return from == vec.Bool || from == vec.Int16 || from == vec.Int32
	case vec.UInt64:
		return from == vec.Bool
	}
	return false
}

func isSignedInt(t vec.Type) bool { return t == vec.Int16 || t == vec.Int32 || t == vec.Int64 }

// CastVector converts v to type to, following DuckDB: integer narrowing and
// double → integer conversions are range-checked (doubles round half away
// from zero), strings are parsed, and a failure is an error naming the
// value. A conversion to FLOAT rounds to single precision; a finite DOUBLE
// beyond FLOAT's range is an error (a string such as '1e39' becomes
// infinity instead, as in DuckDB).
func CastVector(v *vec.Vector, to vec.Type) (*vec.Vector, error) {
	from := v.Type
	n := v.Len
	if from == to {
		return v, nil
	}
	if !canCast(from, to) {
		return nil, fmt.Errorf("cannot cast %s to %s", from, to)
	}
	if from == vec.Null {
		out := newOut(to, n)
		out.Valid = make([]bool, n)
		if to == vec.String {
			out.Offsets = make([]uint32, n+1)
		}
		return out, nil
	}
	if to == vec.String {
		return castToString(v), nil
	}
	if from == vec.String {
		return castFromString(v, to)
	}
	if widens(from, to) {
		// Every value of from is a value of to, stored alike: relabel,
		// sharing the values and validity (Eval results are read-only).
		return &vec.Vector{Type: to, Len: n, I64: v.I64, Valid: v.Valid}, nil
	}
	out := &vec.Vector{Type: to, Len: n, Valid: cloneValid(v.Valid, n)}
	null := func(i int) bool { return v.Valid != nil && !v.Valid[i] }
	switch {
	case to.IsFloat() && from.IsFloat():
		// FLOAT → DOUBLE is exact; DOUBLE → FLOAT rounds.
		out.F64 = make([]float64, n)
		copy(out.F64, v.F64[:n])
		if to == vec.Float32 {
			for i, f := range out.F64 {
				if f > math.MaxFloat32 || f < -math.MaxFloat32 {
					if !math.IsInf(f, 0) && !null(i) {
						return nil, fmt.Errorf("value %s is out of range for FLOAT", strconv.FormatFloat(f, 'g', -1, 64))
					}
				}
				out.F64[i] = float64(float32(f))
			}
		}
	case to == vec.Float32:
		// Every integer is within FLOAT's range; it rounds to nearest.
		out.F64 = make([]float64, n)
		if from == vec.UInt64 {
			for i, x := range v.I64[:n] {
				out.F64[i] = float64(float32(uint64(x)))
			}
		} else {
			for i, x := range v.I64[:n] {
				out.F64[i] = float64(float32(x))
			}
		}
	case to == vec.Float64:
		out.F64 = make([]float64, n)
		if from == vec.UInt64 {
			for i, x := range v.I64[:n] {
				out.F64[i] = float64(uint64(x))
			}
		} else {
			for i, x := range v.I64[:n] {
				out.F64[i] = float64(x)
			}
		}
	case from.IsFloat():
		out.I64 = make([]int64, n)
		for i, f := range v.F64[:n] {
			if null(i) {
				continue
			}
			if to == vec.Bool {
				out.I64[i] = b2i(f != 0)
				continue
			}
			r := math.RoundToEven(f)
			lo, hi := intRange(to)
			if to == vec.UInt64 {
				if !(r >= 0 && r < 18446744073709551616.0) {
					return nil, fmt.Errorf("value %s is out of range for %s", vec.FormatFloat(f), to)
				}
				out.I64[i] = int64(uint64(r))
				continue
			}
			if !(r >= float64(lo) && r < -float64(math.MinInt64) && r <= float64(hi)) {
				return nil, fmt.Errorf("value %s is out of range for %s", vec.FormatFloat(f), to)
			}
			out.I64[i] = int64(r)
		}
	case to == vec.Date && from == vec.Timestamp:
		out.I64 = make([]int64, n)
		for i, x := range v.I64[:n] {
			out.I64[i] = floorDiv(x, microsPerDay)
		}
	case to == vec.Timestamp && from == vec.Date:
		out.I64 = make([]int64, n)
		for i, x := range v.I64[:n] {
			out.I64[i] = x * microsPerDay
		}
	case from == vec.TimestampNS && (to == vec.Timestamp || to == vec.Date):
		// DuckDB truncates nanoseconds towards zero.
		out.I64 = make([]int64, n)
		for i, x := range v.I64[:n] {
			out.I64[i] = x / 1000
			if to == vec.Date {
				out.I64[i] = floorDiv(out.I64[i], microsPerDay)
			}
		}
	case to == vec.TimestampNS && (from == vec.Timestamp || from == vec.Date):
		out.I64 = make([]int64, n)
		for i, x := range v.I64[:n] {
			if from == vec.Date {
				x *= microsPerDay
			}
			if x > math.MaxInt64/1000 || x < math.MinInt64/1000 {
				if v.IsNull(i) {
					continue
				}
				return nil, fmt.Errorf("value %s is out of range for TIMESTAMP_NS", v.Format(i))
			}
			out.I64[i] = x * 1000
		}
	default: // integer → integer
		out.I64 = make([]int64, n)
		if to == vec.Bool {
			for i, x := range v.I64[:n] {
				out.I64[i] = b2i(x != 0)
			}
			break
		}
		lo, hi := intRange(to)
		for i, x := range v.I64[:n] {
			bad := false
			switch {
			case from == vec.UInt64 && to != vec.UInt64:
				bad = uint64(x) > uint64(hi)
			case to == vec.UInt64:
				bad = x < 0
			default:
				bad = x < lo || x > hi
			}
			if bad && !null(i) {
				return nil, fmt.Errorf("value %s is out of range for %s", v.Format(i), to)
			}
			out.I64[i] = x
		}
	}
	return out, nil
}

// castToString renders every value as DuckDB's CAST(x AS VARCHAR) does.
func castToString(v *vec.Vector) *vec.Vector {
	n := v.Len
	out := &vec.Vector{Type: vec.String, Len: n, Valid: cloneValid(v.Valid, n), Offsets: make([]uint32, n+1)}
	var buf []byte
	for i := 0; i < n; i++ {
		if !v.IsNull(i) {
			buf = buf[:0]
			switch v.Type {
			case vec.Float64:
				buf = appendFloat(buf, v.F64[i])
			case vec.Float32:
				buf = appendFloat32(buf, v.F64[i])
			case vec.Int16, vec.Int32, vec.Int64:
				buf = strconv.AppendInt(buf, v.I64[i], 10)
			case vec.Timestamp:
				// Sub-second digits appear only when present, trailing
				// zeros trimmed, as DuckDB prints them.
				buf = time.UnixMicro(v.I64[i]).UTC().AppendFormat(buf, "2006-01-02 15:04:05.999999")
			case vec.TimestampNS:
				buf = time.Unix(0, v.I64[i]).UTC().AppendFormat(buf, "2006-01-02 15:04:05.999999999")
			default:
				buf = append(buf, v.Format(i)...)
			}
			out.Bytes = append(out.Bytes, buf...)
		}
		out.Offsets[i+1] = uint32(len(out.Bytes))
	}
	return out
}

// appendFloat renders a DOUBLE as DuckDB's CAST(x AS VARCHAR) does: the
// shortest decimal that reads back exactly, in positional notation with
// ".0" on integral values when the decimal exponent is in [-4, 16)
// (10000000000.0, 0.0001), in scientific notation otherwise (1e+16,
// 1e-05), like Python's repr.
func appendFloat(buf []byte, f float64) []byte { return appendShortest(buf, f, 64) }

// appendFloat32 renders a FLOAT as appendFloat renders a DOUBLE, with the
// shortest decimal that reads back as the same float32 (3.14, not
// 3.140000104904175).
func appendFloat32(buf []byte, f float64) []byte { return appendShortest(buf, float64(float32(f)), 32) }

func appendShortest(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "nan"...)
	case math.IsInf(f, 1):
		return append(buf, "inf"...)
	case math.IsInf(f, -1):
		return append(buf, "-inf"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits)
	exp, _ := strconv.Atoi(string(e[bytes.IndexByte(e, 'e')+1:]))
	if exp < -4 || exp >= 16 {
		return append(buf, e...)
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, 'f', -1, bits)
	if bytes.IndexByte(buf[start:], '.') < 0 {
		buf = append(buf, ".0"...)
	}
	return buf
}

func castFromString(v *vec.Vector, to vec.Type) (*vec.Vector, error) {
	n := v.Len
	out := newOut(to, n)
	out.Valid = cloneValid(v.Valid, n)
	for i := 0; i < n; i++ {
		if v.IsNull(i) {
			continue
		}
		s := strings.TrimSpace(string(v.Str(i)))
		bad := func() error {
			return fmt.Errorf("could not convert string %s to %s", sql.QuoteString(s), to)
		}
		switch to {
		case vec.Float64, vec.Float32:
			bits := 64
			if to == vec.Float32 {
				bits = 32
			}
			// Out of range parses as ±Inf (or ±0), as in DuckDB.
			f, err := strconv.ParseFloat(s, bits)
			if err != nil && !isRangeErr(err) {
				return nil, bad()
			}
			out.F64[i] = f
		case vec.Bool:
			switch strings.ToLower(s) {
			case "true", "t", "1", "yes", "y", "on":
				out.I64[i] = 1
			case "false", "f", "0", "no", "n", "off":
			default:
				return nil, bad()
			}
		case vec.UInt64:
			u, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, bad()
			}
			out.I64[i] = int64(u)
		case vec.Int16, vec.Int32, vec.Int64:
			x, err := strconv.ParseInt(s, 10, 64)
			lo, hi := intRange(to)
			if err != nil || x < lo || x > hi {
				return nil, bad()
			}
			out.I64[i] = x
		case vec.Date:
			d, err := ParseDate(s)
			if err != nil {
				return nil, bad()
			}
			out.I64[i] = d
		case vec.Timestamp:
			t, err := ParseTimestamp(s)
			if err != nil {
				return nil, bad()
			}
			out.I64[i] = t
		default:
			return nil, fmt.Errorf("cannot cast VARCHAR to %s", to)
		}
	}
	return out, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

const microsPerDay = 86400 * 1_000_000

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
