package storage

import (
	"fmt"

	"cachebook/engine/vec"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// conv says how the physical values of a leaf column become a vec.Vector.
type conv uint8

const (
	convBool   conv = iota // BOOLEAN
	convInt32              // INT32 sign-extended
	convUint8              // INT32 holding an unsigned 8-bit value
	convUint16             // INT32 holding an unsigned 16-bit value
	convUint32             // INT32 holding an unsigned 32-bit value
	convInt64              // INT64 as is (also UINT64, bit for bit)
	convMillis             // INT64 milliseconds → microseconds
	convNanos              // INT64 nanoseconds → microseconds
	convFloat              // FLOAT
	convDouble             // DOUBLE
	convBytes              // BYTE_ARRAY
	convInt96              // INT96 timestamp (nanoseconds of the day, Julian day) → microseconds
	convNone               // an unsupported column: never decoded

	// convDecimal+s: a DECIMAL with scale s (INT32, INT64 or
	// FIXED_LEN_BYTE_ARRAY unscaled values) read as DOUBLE.
	convDecimal conv = 64
	maxScale         = 38
)

// decimalScale returns the scale of a decimal conversion.
func (c conv) decimalScale() (int, bool) {
	if c >= convDecimal && c <= convDecimal+maxScale {
		return int(c - convDecimal), true
	}
	return 0, false
}

// mapType maps a Parquet leaf to an engine type.
//
// ClickBench compatibility: ClickBench's hits.parquet stores EventDate as an
// INT32 annotated UINT16 (days since 1970-01-01) with no DATE annotation, so
// an INT32 column named EventDate with an unsigned 16-bit annotation is read
// as DATE. Every other unsigned 8/16-bit column is an integer.
func mapType(name string, n parquet.Node) (vec.Type, conv, error) {
	t := n.Type()
	lt := t.LogicalType()
	var ct deprecated.ConvertedType = -1
	if c := t.ConvertedType(); c != nil {
		ct = *c
	}
	bad := func() (vec.Type, conv, error) {
		desc := t.Kind().String()
		if lt != nil && lt.Value != nil {
			desc += " " + lt.String()
		} else if ct >= 0 {
			desc += fmt.Sprintf(" (converted type %d)", int(ct))
		}
		return 0, 0, fmt.Errorf("column %q: unsupported Parquet type %s", name, desc)
	}
	var intType *format.IntType
	var tsUnit conv = 255
	var isDate, isDecimalOrOther bool
	if lt != nil && lt.Value != nil {
		if d, ok := lt.Value.(*format.DecimalType); ok {
			// DECIMAL is read as DOUBLE: exact up to 15 significant digits.
			k := t.Kind()
			okKind := k == parquet.Int32 || k == parquet.Int64 || k == parquet.FixedLenByteArray && t.Length() <= 16
			if d.Scale >= 0 && d.Scale <= maxScale && okKind {
				return vec.Float64, convDecimal + conv(d.Scale), nil
			}
			return bad()
		}
		switch v := lt.Value.(type) {
		case *format.IntType:
			intType = v
		case *format.DateType:
			isDate = true
		case *format.TimestampType:
			tsUnit = unitConv(v.Unit)
		case *format.StringType, *format.EnumType,
			*format.JsonType:
		default:
			isDecimalOrOther = true
		}
	} else if ct >= 0 {
		switch ct {
		case deprecated.Int8:
			intType = &format.IntType{BitWidth: 8, IsSigned: true}
		case deprecated.Int16:
			intType = &format.IntType{BitWidth: 16, IsSigned: true}
		case deprecated.Int32:
			intType = &format.IntType{BitWidth: 32, IsSigned: true}
		case deprecated.Int64:
			intType = &format.IntType{BitWidth: 64, IsSigned: true}
		case deprecated.Uint8:
			intType = &format.IntType{BitWidth: 8}
		case deprecated.Uint16:
			intType = &format.IntType{BitWidth: 16}
		case deprecated.Uint32:
			intType = &format.IntType{BitWidth: 32}
		case deprecated.Uint64:
			intType = &format.IntType{BitWidth: 64}
		case deprecated.Date:
			isDate = true
		case deprecated.TimestampMillis:
			tsUnit = convMillis
		case deprecated.TimestampMicros:
			tsUnit = convInt64
		case deprecated.UTF8, deprecated.Enum, deprecated.Json:
		default:
			isDecimalOrOther = true
		}
	}
	if isDecimalOrOther {
		return bad()
	}

	switch t.Kind() {
	case parquet.Boolean:
		if intType != nil || isDate || tsUnit != 255 {
			return bad()
		}
		return vec.Bool, convBool, nil
	case parquet.Int32:
		switch {
		case isDate:
			return vec.Date, convInt32, nil
		case tsUnit != 255:
			return bad()
		case intType == nil:
			return vec.Int32, convInt32, nil
		case intType.IsSigned && intType.BitWidth <= 16:
			return vec.Int16, convInt32, nil
		case intType.IsSigned:
			return vec.Int32, convInt32, nil
		case intType.BitWidth == 8:
			return vec.Int16, convUint8, nil
		case intType.BitWidth == 16:
			if name == "EventDate" {
				return vec.Date, convUint16, nil
			}
			return vec.Int32, convUint16, nil
		default:
			return vec.Int64, convUint32, nil
		}
	case parquet.Int64:
		switch {
		case isDate:
			return bad()
		case tsUnit == convNanos:
			// Kept in nanoseconds: DuckDB compares and groups TIMESTAMP_NS
			// values to the nanosecond.
			return vec.TimestampNS, convInt64, nil
		case tsUnit != 255:
			return vec.Timestamp, tsUnit, nil
		case intType != nil && !intType.IsSigned && intType.BitWidth == 64:
			return vec.UInt64, convInt64, nil
		default:
			return vec.Int64, convInt64, nil
		}
	case parquet.Int96:
		// Impala, Hive and older Spark write timestamps as INT96, as DuckDB
		// and Spark read them.
		if intType != nil || isDate {
			return bad()
		}
		return vec.Timestamp, convInt96, nil
	case parquet.Float:
		if intType != nil || isDate || tsUnit != 255 {
			return bad()
		}
		return vec.Float32, convFloat, nil
	case parquet.Double:
		if intType != nil || isDate || tsUnit != 255 {
			return bad()
		}
		return vec.Float64, convDouble, nil
	case parquet.ByteArray:
		if intType != nil || isDate || tsUnit != 255 {
			return bad()
		}
		return vec.String, convBytes, nil
	}
	return bad()
}

func unitConv(u format.TimeUnit) conv {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return convMillis
	case *format.MicroSeconds:
		return convInt64
	case *format.NanoSeconds:
		return convNanos
	}
	return 255
}
