package expr

import (
	"fmt"
	"math"
	"time"

	"cachebook/engine/vec"
)

const (
	microsPerSecond = 1_000_000
	microsPerMinute = 60 * microsPerSecond
	microsPerHour   = 60 * microsPerMinute
)

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's civil_from_days).
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is the inverse of civil.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// dateParts lists the parts extract, date_part and date_trunc accept, with
// their canonical names.
var dateParts = map[string]string{
	"year": "year", "years": "year", "y": "year", "yr": "year", "yrs": "year",
	"quarter": "quarter", "quarters": "quarter",
	"month": "month", "months": "month", "mon": "month",
	"week": "week", "weeks": "week", "w": "week", "weekofyear": "week",
	"day": "day", "days": "day", "d": "day", "dayofmonth": "day",
	"hour": "hour", "hours": "hour", "h": "hour", "hr": "hour",
	"minute": "minute", "minutes": "minute", "m": "minute", "min": "minute", "mins": "minute",
	"second": "second", "seconds": "second", "s": "second", "sec": "second", "secs": "second",
	"millisecond": "millisecond", "milliseconds": "millisecond", "ms": "millisecond",
	"microsecond": "microsecond", "microseconds": "microsecond", "us": "microsecond",
	"dow": "dow", "dayofweek": "dow", "weekday": "dow", "isodow": "isodow",
	"doy": "doy", "dayofyear": "doy", "epoch": "epoch",
	"decade": "decade", "decades": "decade", "century": "century", "centuries": "century",
	"millennium": "millennium",
}

// extractPart computes one date part of a DATE or TIMESTAMP vector. epoch
// gives DOUBLE seconds; every other part a BIGINT.
func extractPart(part string, v *vec.Vector, n int) (*vec.Vector, error) {
	isDate := v.Type == vec.Date
	x := v.I64[:n]
	if part == "epoch" {
		out := newOut(vec.Float64, n)
		for i, t := range x {
			if isDate {
				out.F64[i] = float64(t * 86400)
			} else {
				out.F64[i] = float64(t) / microsPerSecond
			}
		}
		return out, nil
	}
	out := newOut(vec.Int64, n)
	o := out.I64
	switch part {
	case "hour", "minute", "second", "millisecond", "microsecond":
		if isDate {
			return out, nil // all zero
		}
		mod, div := int64(microsPerMinute), int64(1)
		switch part {
		case "hour":
			mod, div = microsPerDay, microsPerHour
		case "minute":
			mod, div = microsPerHour, microsPerMinute
		case "second":
			div = microsPerSecond
		case "millisecond":
			div = 1000
		}
		for i, t := range x {
			o[i] = floorMod(t, mod) / div
		}
		return out, nil
	}
	for i, t := range x {
		days := t
		if !isDate {
			days = floorDiv(t, microsPerDay)
		}
		switch part {
		case "dow":
			o[i] = floorMod(days+4, 7) // 1970-01-01 was a Thursday; Sunday is 0
		case "isodow":
			o[i] = floorMod(days+3, 7) + 1
		case "week":
			y, m, d := civil(days)
			_, w := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC).ISOWeek()
			o[i] = int64(w)
		default:
			y, m, d := civil(days)
			switch part {
			case "year":
				o[i] = y
			case "quarter":
				o[i] = (m-1)/3 + 1
			case "month":
				o[i] = m
			case "day":
				o[i] = d
			case "doy":
				o[i] = days - daysFromCivil(y, 1, 1) + 1
			case "decade":
				o[i] = floorDiv(y, 10)
			case "century":
				if y > 0 {
					o[i] = (y-1)/100 + 1
				} else {
					o[i] = -((-y)/100 + 1)
				}
			case "millennium":
				if y > 0 {
					o[i] = (y-1)/1000 + 1
				} else {
					o[i] = -((-y)/1000 + 1)
				}
			default:
				return nil, fmt.Errorf("unsupported date part %q", part)
			}
		}
	}
	return out, nil
}

// truncUnit truncates a DATE or TIMESTAMP vector to part; the result is a
// TIMESTAMP, as in DuckDB.
func truncUnit(part string, v *vec.Vector, n int) (*vec.Vector, error) {
	isDate := v.Type == vec.Date
	out := newOut(vec.Timestamp, n)
	x, o := v.I64[:n], out.I64
	var step int64
	switch part {
	case "microsecond":
		step = 1
	case "millisecond":
		step = 1000
	case "second":
		step = microsPerSecond
	case "minute":
		step = microsPerMinute
	case "hour":
		step = microsPerHour
	case "day":
		step = microsPerDay
	}
	if step != 0 {
		if isDate {
			for i, d := range x {
				o[i] = d * microsPerDay
			}
			return out, nil
		}
		for i, t := range x {
			o[i] = t - floorMod(t, step)
		}
		return out, nil
	}
	for i, t := range x {
		days := t
		if !isDate {
			days = floorDiv(t, microsPerDay)
		}
		y, m, _ := civil(days)
		switch part {
		case "week":
			days -= floorMod(days+3, 7) // back to Monday
		case "month":
			days = daysFromCivil(y, m, 1)
		case "quarter":
			days = daysFromCivil(y, (m-1)/3*3+1, 1)
		case "year":
			days = daysFromCivil(y, 1, 1)
		case "decade":
			days = daysFromCivil(floorDiv(y, 10)*10, 1, 1)
		case "century": // DuckDB truncates to 1900, 2000, … (not 1901)
			days = daysFromCivil(floorDiv(y, 100)*100, 1, 1)
		case "millennium":
			days = daysFromCivil(floorDiv(y, 1000)*1000, 1, 1)
		default:
			return nil, fmt.Errorf("unsupported date part %q", part)
		}
		o[i] = days * microsPerDay
	}
	return out, nil
}

// scaleToTimestamp multiplies integers by mul to get microseconds:
// toDateTime (seconds, mul 1e6) and epoch_ms (milliseconds, mul 1000).
func scaleToTimestamp(mul int64) func(args []*vec.Vector, n int) (*vec.Vector, error) {
	return func(args []*vec.Vector, n int) (*vec.Vector, error) {
		out := newOut(vec.Timestamp, n)
		lim := math.MaxInt64 / mul
		for i, x := range args[0].I64[:n] {
			if x > lim || x < -lim {
				return nil, fmt.Errorf("timestamp out of range: %d", x)
			}
			out.I64[i] = x * mul
		}
		return out, nil
	}
}

// divTimestamp converts a TIMESTAMP to integer units of div microseconds
// (epoch_ms(ts): div 1000).
func divTimestamp(div int64) func(args []*vec.Vector, n int) (*vec.Vector, error) {
	return func(args []*vec.Vector, n int) (*vec.Vector, error) {
		out := newOut(vec.Int64, n)
		for i, x := range args[0].I64[:n] {
			out.I64[i] = floorDiv(x, div)
		}
		return out, nil
	}
}

// toTimestamp converts DOUBLE seconds since the epoch to a TIMESTAMP.
func toTimestamp(args []*vec.Vector, n int) (*vec.Vector, error) {
	out := newOut(vec.Timestamp, n)
	for i, f := range args[0].F64[:n] {
		us := math.Round(f * microsPerSecond)
		if !(us > math.MinInt64 && us < math.MaxInt64) {
			if args[0].IsNull(i) {
				continue
			}
			return nil, fmt.Errorf("timestamp out of range: %s", vec.FormatFloat(f))
		}
		out.I64[i] = int64(us)
	}
	return out, nil
}

// makeDate builds a DATE from days since the epoch (one argument, as the
// ClickBench Parquet file stores EventDate) or from year, month, day.
func makeDate(args []*vec.Vector, n int) (*vec.Vector, error) {
	out := newOut(vec.Date, n)
	if len(args) == 1 {
		copy(out.I64, args[0].I64[:n])
		return out, nil
	}
	for i := range out.I64 {
		y, m, d := args[0].I64[i], args[1].I64[i], args[2].I64[i]
		null := args[0].IsNull(i) || args[1].IsNull(i) || args[2].IsNull(i)
		if null {
			continue
		}
		if m < 1 || m > 12 || d < 1 || d > 31 || y < -290000 || y > 290000 {
			return nil, fmt.Errorf("date out of range: %d-%d-%d", y, m, d)
		}
		days := daysFromCivil(y, m, d)
		if yy, mm, _ := civil(days); yy != y || mm != m {
			return nil, fmt.Errorf("date out of range: %d-%d-%d", y, m, d)
		}
		out.I64[i] = days
	}
	return out, nil
}

// timeArith adds or subtracts integer lanes for date/time arithmetic:
// DATE ± days, TIMESTAMP ± INTERVAL, DATE - DATE, TIMESTAMP - TIMESTAMP.
type timeArith struct {
	sub  bool
	l, r Expr
	t    vec.Type
}

func (a *timeArith) Type() vec.Type   { return a.t }
func (a *timeArith) children() []Expr { return []Expr{a.l, a.r} }
func (a *timeArith) setChild(i int, e Expr) {
	if i == 0 {
		a.l = e
	} else {
		a.r = e
	}
}
func (a *timeArith) String() string {
	op := " + "
	if a.sub {
		op = " - "
	}
	return "(" + a.l.String() + op + a.r.String() + ")"
}

func (a *timeArith) Eval(b *vec.Batch) (*vec.Vector, error) {
	lv, err := a.l.Eval(b)
	if err != nil {
		return nil, err
	}
	rv, err := a.r.Eval(b)
	if err != nil {
		return nil, err
	}
	n := b.Len
	out := &vec.Vector{Type: a.t, Len: n, I64: make([]int64, n), Valid: mergeValid(lv.Valid, rv.Valid, n)}
	x, y := lv.I64[:n], rv.I64[:n]
	var ovf int64
	if a.sub {
		for i := range out.I64 {
			s := x[i] - y[i]
			ovf |= (x[i] ^ y[i]) & (s ^ x[i])
			out.I64[i] = s
		}
	} else {
		for i := range out.I64 {
			s := x[i] + y[i]
			ovf |= (s ^ x[i]) & (s ^ y[i])
			out.I64[i] = s
		}
	}
	for i, v := range out.I64 {
		if out.Valid != nil && !out.Valid[i] {
			continue
		}
		if ovf < 0 && (a.sub && (x[i]^y[i])&(v^x[i]) < 0 || !a.sub && (v^x[i])&(v^y[i]) < 0) {
			return nil, fmt.Errorf("%s out of range: %s", a.t, a)
		}
		if a.t == vec.Date && (v < minDate || v > maxDate) {
			return nil, fmt.Errorf("DATE out of range: %s gives %d days since 1970-01-01", a, v)
		}
	}
	return out, nil
}

// minDate and maxDate bound DuckDB's DATE (a 32-bit day count, whose two
// extreme values mean -infinity and infinity): 5877642-06-25 (BC) to
// 5881580-07-10.
const (
	minDate = -(1<<31 - 2)
	maxDate = 1<<31 - 2
)
