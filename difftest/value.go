package difftest

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// Kind classifies a column for comparison purposes.
type Kind uint8

// The column kinds. Integer covers every integer width and sign, HUGEINT and
// DECIMAL with scale 0; Float covers FLOAT, DOUBLE and other DECIMALs.
const (
	KindOther Kind = iota
	KindBool
	KindInteger
	KindFloat
	KindString
	KindTime
)

func (k Kind) String() string {
	switch k {
	case KindBool:
		return "bool"
	case KindInteger:
		return "integer"
	case KindFloat:
		return "float"
	case KindString:
		return "string"
	case KindTime:
		return "time"
	}
	return "other"
}

// Normalize maps a value produced by DuckDB's driver or by our engine's
// vec.Vector.Value to one of: nil, bool, int64, uint64 (only above
// math.MaxInt64), *big.Int (only outside the int64 and uint64 ranges),
// float64, string, time.Time (UTC), or a string rendering for any other type.
func Normalize(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return x
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return x
	case float32:
		return float64(x)
	case *big.Int:
		return normBig(x)
	case duckdb.Decimal:
		if x.Value == nil {
			return nil
		}
		if x.Scale == 0 {
			return normBig(x.Value)
		}
		return x.Float64()
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC()
	}
	return fmt.Sprintf("%T:%v", v, v)
}

func normBig(x *big.Int) any {
	switch {
	case x.IsInt64():
		return x.Int64()
	case x.IsUint64():
		return x.Uint64()
	}
	return new(big.Int).Set(x)
}

// bigOf returns an integer value as a big.Int, or nil for a non-integer.
func bigOf(v any) *big.Int {
	switch x := v.(type) {
	case int64:
		return big.NewInt(x)
	case uint64:
		return new(big.Int).SetUint64(x)
	case *big.Int:
		return x
	}
	return nil
}

func floatOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, true
	}
	return 0, false
}

// FloatTolerance is the relative tolerance of float comparisons.
const FloatTolerance = 1e-9

// FloatEqual reports whether a and b are equal within FloatTolerance
// (relative, or absolute near zero), treating NaN as equal to NaN and
// infinities by sign.
func FloatEqual(a, b float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	d := math.Abs(a - b)
	// The absolute bound covers sums that cancel to about zero, whose last
	// bits depend on the order rows were added in (-1.1e-16 against 0).
	return d <= FloatTolerance*math.Max(math.Abs(a), math.Abs(b)) || d < FloatTolerance
}

// ValueEqual compares two normalised values. Integers compare exactly across
// widths (an int64 equals a HUGEINT of the same value); a float compares with
// any number within FloatTolerance; times compare as instants.
func ValueEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ba, bb := bigOf(a), bigOf(b)
	if ba != nil && bb != nil {
		return ba.Cmp(bb) == 0
	}
	if fa, ok := floatOf(a); ok {
		if fb, ok := floatOf(b); ok {
			return FloatEqual(fa, fb)
		}
		return false
	}
	switch x := a.(type) {
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return false
}

// exactKey renders a normalised value so that two values have the same key
// exactly when they are equal without tolerance (integers of every width
// share one form; floats keep all bits).
func exactKey(v any) string {
	switch x := v.(type) {
	case nil:
		return "N"
	case bool:
		if x {
			return "B1"
		}
		return "B0"
	case int64:
		return "I" + strconv.FormatInt(x, 10)
	case uint64:
		return "I" + strconv.FormatUint(x, 10)
	case *big.Int:
		return "I" + x.String()
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return "I" + strconv.FormatInt(int64(x), 10)
		}
		return "F" + strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return "S" + strconv.Quote(x)
	case time.Time:
		return "T" + strconv.FormatInt(x.UnixNano(), 10)
	}
	return "O" + fmt.Sprint(v)
}

// FormatValue renders a normalised value for messages: strings quoted,
// NULL as NULL.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		if len(x) > 80 {
			return strconv.Quote(x[:77]) + "…"
		}
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05.999999")
	}
	return fmt.Sprint(v)
}

// FormatRow renders a row as (v1, v2, …).
func FormatRow(r []any) string {
	s := make([]string, len(r))
	for i, v := range r {
		s[i] = FormatValue(v)
	}
	return "(" + strings.Join(s, ", ") + ")"
}
