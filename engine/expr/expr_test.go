package expr

import (
	"errors"
	"strings"
	"testing"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// testBatch is a 5-row batch with NULLs in most columns.
func testBatch(t testing.TB) ([]vec.Column, *vec.Batch) {
	t.Helper()
	cols := []vec.Column{
		{Name: "i", Type: vec.Int32},
		{Name: "j", Type: vec.Int64},
		{Name: "f", Type: vec.Float64},
		{Name: "s", Type: vec.String},
		{Name: "d", Type: vec.Date},
		{Name: "ts", Type: vec.Timestamp},
		{Name: "b", Type: vec.Bool},
		{Name: "u", Type: vec.UInt64},
		{Name: "sec", Type: vec.Int64},
		{Name: "UserID", Type: vec.Int64},
		{Name: "pat", Type: vec.String},
	}
	rows := [][]any{
		// i, j, f, s, d, ts, b, u, sec, UserID, pat
		{1, 10, 1.5, "Hello", "2013-07-01", "2013-07-15 10:31:45", true, uint64(1 << 63), 1373884305, 7, "H%"},
		{-2, 0, nil, "", "2013-07-31", "1969-12-31 23:59:59", false, uint64(5), 0, 8, "%"},
		{nil, 3, -2.5, nil, nil, nil, nil, nil, nil, 9, nil},
		{4, nil, 0.0, "wörld", "2000-02-29", "2000-02-29 00:00:00", true, uint64(0), -1, 10, "_ö%"},
		{7, -3, 2.5, "a'b%c", "1970-01-01", "2013-07-14 23:59:59.5", nil, uint64(18446744073709551615), 60, 11, "a'b\\%c"},
	}
	b := &vec.Batch{Len: len(rows)}
	for c, col := range cols {
		v := vec.NewVector(col.Type, len(rows))
		for _, r := range rows {
			x := r[c]
			if x == nil {
				v.AppendNull()
				continue
			}
			switch col.Type {
			case vec.Float64:
				v.AppendFloat(x.(float64))
			case vec.String:
				v.AppendStr([]byte(x.(string)))
			case vec.Date:
				d, err := ParseDate(x.(string))
				if err != nil {
					t.Fatal(err)
				}
				v.AppendInt(d)
			case vec.Timestamp:
				ts, err := ParseTimestamp(x.(string))
				if err != nil {
					t.Fatal(err)
				}
				v.AppendInt(ts)
			case vec.Bool:
				v.AppendInt(b2i(x.(bool)))
			case vec.UInt64:
				v.AppendInt(int64(x.(uint64)))
			default:
				v.AppendInt(int64(x.(int)))
			}
		}
		b.Vecs = append(b.Vecs, v)
	}
	return cols, b
}

func evalSQL(t *testing.T, src string) (Expr, *vec.Vector, error) {
	t.Helper()
	cols, b := testBatch(t)
	return evalOver(t, cols, b, src)
}

// evalOver binds src over cols and evaluates it over b.
func evalOver(t *testing.T, cols []vec.Column, b *vec.Batch, src string) (Expr, *vec.Vector, error) {
	t.Helper()
	ast, err := sql.ParseExpr(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	e, err := (&Binder{Columns: cols}).Bind(ast)
	if err != nil {
		return nil, nil, err
	}
	v, err := e.Eval(b)
	return e, v, err
}

func formatAll(v *vec.Vector) string {
	parts := make([]string, v.Len)
	for i := range parts {
		parts[i] = v.Format(i)
	}
	return strings.Join(parts, "|")
}

func TestEval(t *testing.T) {
	tests := []struct {
		src  string
		typ  vec.Type
		want string // values of the 5 rows joined by |
	}{
		// Arithmetic.
		{"i + 1", vec.Int64, "2|-1|NULL|5|8"},
		{"i + j", vec.Int64, "11|-2|NULL|NULL|4"},
		{"1 + i", vec.Int64, "2|-1|NULL|5|8"},
		{"j - i", vec.Int64, "9|2|NULL|NULL|-10"},
		{"10 - i", vec.Int64, "9|12|NULL|6|3"},
		{"i * j", vec.Int64, "10|0|NULL|NULL|-21"},
		{"i * 3", vec.Int64, "3|-6|NULL|12|21"},
		{"i / 2", vec.Float64, "0.5|-1|NULL|2|3.5"},
		{"j / i", vec.Float64, "10|-0|NULL|NULL|-0.428571"},
		{"i / 0", vec.Float64, "inf|-inf|NULL|inf|inf"},
		{"0 / 0", vec.Float64, "nan|nan|nan|nan|nan"},
		{"j // i", vec.Int64, "10|0|NULL|NULL|0"},
		{"i // 2", vec.Int64, "0|-1|NULL|2|3"},
		{"i // 0", vec.Int64, "NULL|NULL|NULL|NULL|NULL"},
		{"i % 3", vec.Int64, "1|-2|NULL|1|1"},
		{"-7 % 3", vec.Int64, "-1|-1|-1|-1|-1"},
		{"7 % -3", vec.Int64, "1|1|1|1|1"},
		{"i % j", vec.Int64, "1|NULL|NULL|NULL|1"},
		{"f + i", vec.Float64, "2.5|NULL|NULL|4|9.5"},
		{"f * 2", vec.Float64, "3|NULL|-5|0|5"},
		{"f % 1", vec.Float64, "0.5|NULL|-0.5|0|0.5"},
		{"f // 2", vec.Float64, "0.75|NULL|-1.25|0|1.25"},
		{"f // 0", vec.Float64, "NULL|NULL|NULL|NULL|NULL"},
		{"i // 2.0", vec.Float64, "0.5|-1|NULL|2|3.5"},
		{"f // f", vec.Float64, "1|NULL|1|NULL|1"},
		{"f % 0", vec.Float64, "nan|NULL|nan|nan|nan"},
		{"-i", vec.Int64, "-1|2|NULL|-4|-7"},
		{"-f", vec.Float64, "-1.5|NULL|2.5|-0|-2.5"},
		{"+i", vec.Int32, "1|-2|NULL|4|7"},
		{"i + NULL", vec.Int64, "NULL|NULL|NULL|NULL|NULL"},
		{"i + '2'", vec.Int64, "3|0|NULL|6|9"},
		{"1 + 2 * 3", vec.Int64, "7|7|7|7|7"},
		{"u + 1", vec.UInt64, ""}, // overflow on the last row
		{"u * 1", vec.UInt64, "9223372036854775808|5|NULL|0|18446744073709551615"},
		{"u // 2 + u % 2", vec.UInt64, "4611686018427387904|3|NULL|0|9223372036854775808"},
		{"u + i", vec.Float64, "9.22337e+18|3|NULL|4|1.84467e+19"},
		// Comparison.
		{"i = 1", vec.Bool, "true|false|NULL|false|false"},
		{"i <> 1", vec.Bool, "false|true|NULL|true|true"},
		{"1 < i", vec.Bool, "false|false|NULL|true|true"},
		{"i <= j", vec.Bool, "true|true|NULL|NULL|false"},
		{"i > f", vec.Bool, "false|NULL|NULL|true|true"},
		{"f >= 0", vec.Bool, "true|NULL|false|true|true"},
		{"i = NULL", vec.Bool, "NULL|NULL|NULL|NULL|NULL"},
		{"s = 'Hello'", vec.Bool, "true|false|NULL|false|false"},
		{"s <> ''", vec.Bool, "true|false|NULL|true|true"},
		{"s < 'b'", vec.Bool, "true|true|NULL|false|true"},
		{"s >= s", vec.Bool, "true|true|NULL|true|true"},
		{"'b' > s", vec.Bool, "true|true|NULL|false|true"},
		{"d >= '2013-07-01'", vec.Bool, "true|true|NULL|false|false"},
		{"d <= '2013-07-31' AND d >= '2013-07-01'", vec.Bool, "true|true|NULL|false|false"},
		{"d = DATE '2000-02-29'", vec.Bool, "false|false|NULL|true|false"},
		{"ts < d", vec.Bool, "false|true|NULL|false|false"},
		{"ts > '2013-07-15'", vec.Bool, "true|false|NULL|false|false"},
		{"u > 5", vec.Bool, "true|false|NULL|false|true"},
		{"u = 18446744073709551615", vec.Bool, "false|false|NULL|false|true"},
		{"u > i", vec.Bool, "true|true|NULL|false|true"},
		{"b = true", vec.Bool, "true|false|NULL|true|NULL"},
		{"i BETWEEN 1 AND 4", vec.Bool, "true|false|NULL|true|false"},
		{"i NOT BETWEEN 1 AND 4", vec.Bool, "false|true|NULL|false|true"},
		{"UserID = 435090932899640449", vec.Bool, "false|false|false|false|false"},
		// Logic with NULLs.
		{"b AND i > 0", vec.Bool, "true|false|NULL|true|NULL"},
		{"b OR i > 0", vec.Bool, "true|false|NULL|true|true"},
		{"b AND NULL", vec.Bool, "NULL|false|NULL|NULL|NULL"},
		{"b OR NULL", vec.Bool, "true|NULL|NULL|true|NULL"},
		{"NOT b", vec.Bool, "false|true|NULL|false|NULL"},
		{"NOT (i > 1)", vec.Bool, "true|true|NULL|false|false"},
		{"i AND b", vec.Bool, "true|false|NULL|true|NULL"},
		{"NOT i", vec.Bool, "false|false|NULL|false|false"},
		{"CASE WHEN i THEN 1 END", vec.Int64, "1|1|NULL|1|1"},
		{"f OR false", vec.Bool, "true|NULL|true|false|true"},
		{"i IS NULL", vec.Bool, "false|false|true|false|false"},
		{"s IS NOT NULL", vec.Bool, "true|true|false|true|true"},
		{"j IS NULL OR b", vec.Bool, "true|false|NULL|true|NULL"},
		{"NULL IS NULL", vec.Bool, "true|true|true|true|true"},
		{"UserID IS NULL", vec.Bool, "false|false|false|false|false"},
		// IN.
		{"i IN (1, 4)", vec.Bool, "true|false|NULL|true|false"},
		{"i NOT IN (1, 4)", vec.Bool, "false|true|NULL|false|true"},
		{"i IN (-1, 6)", vec.Bool, "false|false|NULL|false|false"},
		{"i IN (1, NULL)", vec.Bool, "true|NULL|NULL|NULL|NULL"},
		{"i NOT IN (1, NULL)", vec.Bool, "false|NULL|NULL|NULL|NULL"},
		{"i IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)", vec.Bool, "true|false|NULL|true|true"},
		{"i IN (1.5, 7)", vec.Bool, "false|false|NULL|false|true"},
		{"s IN ('Hello', 'x')", vec.Bool, "true|false|NULL|false|false"},
		{"d IN ('2013-07-01', '2000-02-29')", vec.Bool, "true|false|NULL|true|false"},
		{"i IN (j, 4)", vec.Bool, "false|false|NULL|true|false"},
		{"f IN (1.5, 0)", vec.Bool, "true|NULL|false|true|false"},
		// LIKE.
		{"s LIKE '%ll%'", vec.Bool, "true|false|NULL|false|false"},
		{"s LIKE 'H%'", vec.Bool, "true|false|NULL|false|false"},
		{"s LIKE '%d'", vec.Bool, "false|false|NULL|true|false"},
		{"s LIKE 'Hello'", vec.Bool, "true|false|NULL|false|false"},
		{"s LIKE '%'", vec.Bool, "true|true|NULL|true|true"},
		{"s LIKE '_ö%'", vec.Bool, "false|false|NULL|true|false"},
		{"s LIKE 'w_rld'", vec.Bool, "false|false|NULL|true|false"},
		{"s LIKE 'H%l%o'", vec.Bool, "true|false|NULL|false|false"},
		{"s LIKE '%l%l%'", vec.Bool, "true|false|NULL|false|false"},
		{"s LIKE 'a%c'", vec.Bool, "false|false|NULL|false|true"},
		{"s LIKE '_'", vec.Bool, "false|false|NULL|false|false"},
		{"s NOT LIKE '%ll%'", vec.Bool, "false|true|NULL|true|true"},
		{"s ILIKE '%LL%'", vec.Bool, "true|false|NULL|false|false"},
		{"s ILIKE 'WÖ%'", vec.Bool, "false|false|NULL|true|false"},
		{"s NOT ILIKE 'h%'", vec.Bool, "false|true|NULL|true|true"},
		{"s LIKE pat", vec.Bool, "true|true|NULL|true|false"},
		{"s LIKE NULL", vec.Bool, "NULL|NULL|NULL|NULL|NULL"},
		// CASE, coalesce, nullif.
		{"CASE WHEN i > 1 THEN 'big' WHEN i < 0 THEN 'neg' ELSE 'small' END", vec.String, "small|neg|small|big|big"},
		{"CASE WHEN (i = 1 AND j = 10) THEN s ELSE '' END", vec.String, "Hello||||"},
		{"CASE i WHEN 1 THEN 10 WHEN 4 THEN 40 END", vec.Int64, "10|NULL|NULL|40|NULL"},
		{"CASE WHEN b THEN f ELSE i END", vec.Float64, "1.5|-2|NULL|0|7"},
		{"CASE WHEN true THEN 1 ELSE i END", vec.Int64, "1|1|1|1|1"},
		{"CASE WHEN false THEN 1 ELSE i END", vec.Int64, "1|-2|NULL|4|7"},
		{"coalesce(i, j, 0)", vec.Int64, "1|-2|3|4|7"},
		{"coalesce(s, 'none')", vec.String, "Hello||none|wörld|a'b%c"},
		{"coalesce(NULL, NULL)", vec.Null, "NULL|NULL|NULL|NULL|NULL"},
		{"ifnull(j, -1)", vec.Int64, "10|0|3|-1|-3"},
		{"nullif(i, 4)", vec.Int32, "1|-2|NULL|NULL|7"},
		{"nullif(s, '')", vec.String, "Hello|NULL|NULL|wörld|a'b%c"},
		// String functions.
		{"length(s)", vec.Int64, "5|0|NULL|5|5"},
		{"strlen(s)", vec.Int64, "5|0|NULL|6|5"},
		{"lower(s)", vec.String, "hello||NULL|wörld|a'b%c"},
		{"upper(s)", vec.String, "HELLO||NULL|WÖRLD|A'B%C"},
		{"substr(s, 2)", vec.String, "ello||NULL|örld|'b%c"},
		{"substr(s, 2, 2)", vec.String, "el||NULL|ör|'b"},
		{"substring(s, -3, 2)", vec.String, "ll||NULL|rl|b%"},
		{"substr(s, 0, 2)", vec.String, "H||NULL|w|a"},
		{"substr(s, 10)", vec.String, "||NULL||"},
		{"substr(s, 4, -2)", vec.String, "el||NULL|ör|'b"},
		{"substr(s, -1, -2)", vec.String, "ll||NULL|rl|b%"},
		{"substr(s, 10, -8)", vec.String, "ello||NULL|örld|'b%c"},
		{"concat(s, '-', i)", vec.String, "Hello-1|--2|-|wörld-4|a'b%c-7"},
		{"s || '!'", vec.String, "Hello!|!|NULL|wörld!|a'b%c!"},
		{"s || i", vec.String, "Hello1|-2|NULL|wörld4|a'b%c7"},
		{"regexp_replace(s, 'l+', 'L')", vec.String, "HeLo||NULL|wörLd|a'b%c"},
		{"regexp_replace(s, 'l', 'L', 'g')", vec.String, "HeLLo||NULL|wörLd|a'b%c"},
		{"regexp_replace(s, '^(.)(.*)$', '\\2\\1')", vec.String, "elloH||NULL|örldw|'b%ca"},
		{"regexp_replace(s, 'L', '$', 'gi')", vec.String, "He$$o||NULL|wör$d|a'b%c"},
		{"regexp_replace('http://www.example.com/path', '^https?://(?:www\\.)?([^/]+)/.*$', '\\1')", vec.String,
			"example.com|example.com|example.com|example.com|example.com"},
		// Numeric functions.
		{"abs(i)", vec.Int64, "1|2|NULL|4|7"},
		{"abs(f)", vec.Float64, "1.5|NULL|2.5|0|2.5"},
		{"round(f)", vec.Float64, "2|NULL|-3|0|3"},
		{"round(f * 1.234, 2)", vec.Float64, "1.85|NULL|-3.09|0|3.09"},
		{"round(j, -1)", vec.Int64, "10|0|0|NULL|0"},
		{"floor(i)", vec.Float64, "1|-2|NULL|4|7"},
		{"floor(f)", vec.Float64, "1|NULL|-3|0|2"},
		{"ceil(f)", vec.Float64, "2|NULL|-2|0|3"},
		// Casts.
		{"CAST(i AS VARCHAR)", vec.String, "1|-2|NULL|4|7"},
		{"CAST(f AS VARCHAR)", vec.String, "1.5|NULL|-2.5|0.0|2.5"},
		{"CAST(f AS INTEGER)", vec.Int32, "2|NULL|-2|0|2"},
		{"CAST(i AS DOUBLE) / 4", vec.Float64, "0.25|-0.5|NULL|1|1.75"},
		{"CAST('42' AS BIGINT) + i", vec.Int64, "43|40|NULL|46|49"},
		{"i::varchar || 'x'", vec.String, "1x|-2x|NULL|4x|7x"},
		{"CAST(ts AS DATE)", vec.Date, "2013-07-15|1969-12-31|NULL|2000-02-29|2013-07-14"},
		{"CAST(d AS TIMESTAMP)", vec.Timestamp, "2013-07-01 00:00:00|2013-07-31 00:00:00|NULL|2000-02-29 00:00:00|1970-01-01 00:00:00"},
		{"CAST(ts AS VARCHAR)", vec.String, "2013-07-15 10:31:45|1969-12-31 23:59:59|NULL|2000-02-29 00:00:00|2013-07-14 23:59:59.5"},
		{"CAST(d AS VARCHAR)", vec.String, "2013-07-01|2013-07-31|NULL|2000-02-29|1970-01-01"},
		{"CAST(b AS INTEGER)", vec.Int32, "1|0|NULL|1|NULL"},
		{"CAST(i AS BOOLEAN)", vec.Bool, "true|true|NULL|true|true"},
		{"CAST(s AS BIGINT) IS NULL", vec.Bool, ""}, // error: 'Hello' is not a number
		{"CAST('2013-07-01' AS DATE)", vec.Date, "2013-07-01|2013-07-01|2013-07-01|2013-07-01|2013-07-01"},
		// Dates and times.
		{"toDateTime(sec)", vec.Timestamp, "2013-07-15 10:31:45|1970-01-01 00:00:00|NULL|1969-12-31 23:59:59|1970-01-01 00:01:00"},
		{"extract(minute FROM toDateTime(sec))", vec.Int64, "31|0|NULL|59|1"},
		{"extract(minute FROM ts)", vec.Int64, "31|59|NULL|0|59"},
		{"extract(hour FROM ts)", vec.Int64, "10|23|NULL|0|23"},
		{"extract(second FROM ts)", vec.Int64, "45|59|NULL|0|59"},
		{"extract(year FROM d)", vec.Int64, "2013|2013|NULL|2000|1970"},
		{"extract(month FROM ts)", vec.Int64, "7|12|NULL|2|7"},
		{"extract(day FROM d)", vec.Int64, "1|31|NULL|29|1"},
		{"extract(dow FROM d)", vec.Int64, "1|3|NULL|2|4"},
		{"extract(doy FROM d)", vec.Int64, "182|212|NULL|60|1"},
		{"extract(quarter FROM d)", vec.Int64, "3|3|NULL|1|1"},
		{"extract(epoch FROM ts)", vec.Float64, "1.37388e+09|-1|NULL|9.51782e+08|1.37385e+09"},
		{"extract(hour FROM d)", vec.Int64, "0|0|NULL|0|0"},
		{"date_part('year', ts)", vec.Int64, "2013|1969|NULL|2000|2013"},
		{"year(d)", vec.Int64, "2013|2013|NULL|2000|1970"},
		{"date_trunc('minute', ts)", vec.Timestamp, "2013-07-15 10:31:00|1969-12-31 23:59:00|NULL|2000-02-29 00:00:00|2013-07-14 23:59:00"},
		{"date_trunc('minute', toDateTime(sec))", vec.Timestamp, "2013-07-15 10:31:00|1970-01-01 00:00:00|NULL|1969-12-31 23:59:00|1970-01-01 00:01:00"},
		{"date_trunc('hour', ts)", vec.Timestamp, "2013-07-15 10:00:00|1969-12-31 23:00:00|NULL|2000-02-29 00:00:00|2013-07-14 23:00:00"},
		{"date_trunc('day', ts)", vec.Timestamp, "2013-07-15 00:00:00|1969-12-31 00:00:00|NULL|2000-02-29 00:00:00|2013-07-14 00:00:00"},
		{"date_trunc('month', d)", vec.Timestamp, "2013-07-01 00:00:00|2013-07-01 00:00:00|NULL|2000-02-01 00:00:00|1970-01-01 00:00:00"},
		{"date_trunc('year', ts)", vec.Timestamp, "2013-01-01 00:00:00|1969-01-01 00:00:00|NULL|2000-01-01 00:00:00|2013-01-01 00:00:00"},
		{"date_trunc('week', d)", vec.Timestamp, "2013-07-01 00:00:00|2013-07-29 00:00:00|NULL|2000-02-28 00:00:00|1969-12-29 00:00:00"},
		{"date_trunc('quarter', d)", vec.Timestamp, "2013-07-01 00:00:00|2013-07-01 00:00:00|NULL|2000-01-01 00:00:00|1970-01-01 00:00:00"},
		{"date_trunc('day', d)", vec.Timestamp, "2013-07-01 00:00:00|2013-07-31 00:00:00|NULL|2000-02-29 00:00:00|1970-01-01 00:00:00"},
		{"date_trunc('century', ts)", vec.Timestamp, "2000-01-01 00:00:00|1900-01-01 00:00:00|NULL|2000-01-01 00:00:00|2000-01-01 00:00:00"},
		{"date_trunc('millennium', ts)", vec.Timestamp, "2000-01-01 00:00:00|1000-01-01 00:00:00|NULL|2000-01-01 00:00:00|2000-01-01 00:00:00"},
		{"epoch_ms(sec * 1000)", vec.Timestamp, "2013-07-15 10:31:45|1970-01-01 00:00:00|NULL|1969-12-31 23:59:59|1970-01-01 00:01:00"},
		{"epoch_ms(ts)", vec.Int64, "1373884305000|-1000|NULL|951782400000|1373846399500"},
		{"to_timestamp(sec)", vec.Timestamp, "2013-07-15 10:31:45|1970-01-01 00:00:00|NULL|1969-12-31 23:59:59|1970-01-01 00:01:00"},
		{"make_date(15887)", vec.Date, "2013-07-01|2013-07-01|2013-07-01|2013-07-01|2013-07-01"},
		{"make_date(2013, 7, abs(i))", vec.Date, "2013-07-01|2013-07-02|NULL|2013-07-04|2013-07-07"},
		{"make_date(2013, 2, 29 + i - i)", vec.Date, ""},
		{"d + 1", vec.Date, "2013-07-02|2013-08-01|NULL|2000-03-01|1970-01-02"},
		{"d - DATE '2013-07-01'", vec.Int64, "0|30|NULL|-4871|-15887"},
		{"ts + INTERVAL 1 HOUR", vec.Timestamp, "2013-07-15 11:31:45|1970-01-01 00:59:59|NULL|2000-02-29 01:00:00|2013-07-15 00:59:59"},
		{"d - INTERVAL '1' day", vec.Timestamp, "2013-06-30 00:00:00|2013-07-30 00:00:00|NULL|2000-02-28 00:00:00|1969-12-31 00:00:00"},
		// Constants.
		{"'x'", vec.String, "x|x|x|x|x"},
		{"NULL", vec.Null, "NULL|NULL|NULL|NULL|NULL"},
		{"TIMESTAMP '2013-07-01 12:00:00'", vec.Timestamp, "2013-07-01 12:00:00|2013-07-01 12:00:00|2013-07-01 12:00:00|2013-07-01 12:00:00|2013-07-01 12:00:00"},
	}
	for _, tt := range tests {
		e, v, err := evalSQL(t, tt.src)
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: want an error, got %s", tt.src, formatAll(v))
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if e.Type() != tt.typ || v.Type != tt.typ {
			t.Errorf("%s: type %s (vector %s), want %s", tt.src, e.Type(), v.Type, tt.typ)
		}
		if v.Len != 5 {
			t.Errorf("%s: %d values, want 5", tt.src, v.Len)
			continue
		}
		if got := formatAll(v); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.src, got, tt.want)
		}
		checkVector(t, tt.src, v)
	}
}

// checkVector verifies the storage invariants of a result vector.
func checkVector(t *testing.T, src string, v *vec.Vector) {
	t.Helper()
	if v.Valid != nil {
		if len(v.Valid) < v.Len {
			t.Errorf("%s: Valid has %d entries for %d values", src, len(v.Valid), v.Len)
		}
	}
	switch {
	case v.Type == vec.Null:
	case v.Type == vec.Float64:
		if len(v.F64) < v.Len {
			t.Errorf("%s: F64 too short", src)
		}
	case v.Type == vec.String:
		if len(v.Offsets) != v.Len+1 {
			t.Errorf("%s: %d offsets for %d values", src, len(v.Offsets), v.Len)
		}
	default:
		if len(v.I64) < v.Len {
			t.Errorf("%s: I64 too short", src)
		}
	}
}

func TestFolding(t *testing.T) {
	tests := []struct{ src, want string }{
		{"1 + 2 * 3", "7"},
		{"'a' || 'b'", "'ab'"},
		{"i + (1 + 2)", "(i + 3)"},
		{"-1", "-1"},
		{"DATE '2013-07-01' + 1", "DATE '2013-07-02'"},
		{"upper('x')", "'X'"},
		{"CASE WHEN 1 = 1 THEN i END", "i"},
		{"i IN (-1, 6)", "(i IN (-1, 6))"},
		{"NULL = 1", "NULL"},
		{"1.0 / 4", "0.25"},
		{"d >= '2013-07-01'", "(d >= DATE '2013-07-01')"},
		{"date_trunc('minute', toDateTime(sec))", "date_trunc(todatetime(sec), 'minute')"},
	}
	cols, _ := testBatch(t)
	for _, tt := range tests {
		ast, err := sql.ParseExpr(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		e, err := (&Binder{Columns: cols}).Bind(ast)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if got := e.String(); got != tt.want {
			t.Errorf("%s folds to %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestBindErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"UserIDD + 1", `1:1: column "UserIDD" not found; did you mean "UserID"?`},
		{"i + nosuchthing", `1:5: column "nosuchthing" not found`},
		{"count(*) + 1", "1:1: aggregate function count is not allowed here"},
		{"1 + sum(i)", "1:5: aggregate function sum is not allowed here"},
		{"s + 1", "1:3: cannot apply + to VARCHAR and BIGINT"},
		{"s = 1", "1:3: cannot compare VARCHAR and BIGINT with ="},
		{"d = i", "1:3: cannot compare DATE and INTEGER with ="},
		{"s AND b", "1:3: AND expects BOOLEAN operands, got VARCHAR and BOOLEAN"},
		{"NOT d", "1:1: NOT expects BOOLEAN, got DATE"},
		{"b OR 'maybe'", "1:6: could not convert string 'maybe' to BOOLEAN"},
		{"d >= '2013-13-01'", `1:6: could not convert string '2013-13-01' to DATE`},
		{"nosuchfn(i)", "1:1: function nosuchfn is not supported"},
		{"length(s, s)", "1:1: function length takes 1 argument, got 2"},
		{"substr(s)", "1:1: function substr takes 2 to 3 arguments, got 1"},
		{"regexp_replace(s, pat, 'x')", "1:19: argument 2 of regexp_replace must be a constant string"},
		{"regexp_replace(s, '(', 'x')", "1:19: invalid regular expression: error parsing regexp: missing closing ): `(`"},
		{"date_trunc('fortnight', ts)", `1:12: unsupported date_trunc part "fortnight"`},
		{"extract(fortnight FROM ts)", `1:1: unknown date part "fortnight"`},
		{"extract(year FROM i)", "1:19: extract expects a DATE or TIMESTAMP, got INTEGER"},
		{"CAST(i AS blob)", "1:1: type BLOB is not supported"},
		{"CAST(d AS INTEGER)", "1:1: cannot cast DATE to INTEGER"},
		{"CASE WHEN s THEN 1 END", "1:11: CASE WHEN condition must be BOOLEAN, got VARCHAR"},
		{"CASE WHEN b THEN 1 ELSE 'x' END", "1:25: could not convert string 'x' to BIGINT"},
		{"CASE WHEN b THEN d ELSE i END", "1:1: CASE mixes DATE and INTEGER"},
		{"s LIKE 1", "1:8: LIKE pattern must be VARCHAR, got BIGINT"},
		{"i IN ('a')", "1:7: could not convert string 'a' to INTEGER"},
		{"d IN (1)", "1:7: cannot compare DATE with BIGINT in IN list"},
		{"abs(s)", "1:5: function abs expects a number, got VARCHAR"},
		{"INTERVAL 1 MONTH", "1:1: INTERVAL MONTH is not supported: intervals are a fixed number of microseconds"},
		{"9223372036854775807 + 1", "1:21: overflow in BIGINT +"},
		{"DATE '2013-13-01'", `1:1: invalid date "2013-13-01": expected YYYY-MM-DD`},
		{"d < TIMESTAMP '2013-07-01 25:00'", `1:5: invalid timestamp "2013-07-01 25:00": expected YYYY-MM-DD HH:MM:SS`},
		{"upper(s) || make_date(2013, 13, 1)", "1:13: make_date: date out of range: 2013-13-1"},
		{"i + 9223372036854775807", ""}, // overflow only at evaluation time
		{"lower(count(DISTINCT i))", "1:7: aggregate function count is not allowed here"},
		{"upper(DISTINCT s)", "1:1: DISTINCT is only allowed in aggregate functions, not in upper"},
	}
	cols, b := testBatch(t)
	for _, tt := range tests {
		ast, err := sql.ParseExpr(tt.src)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.src, err)
		}
		e, err := (&Binder{Columns: cols}).Bind(ast)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: bind: %v", tt.src, err)
				continue
			}
			if _, err := e.Eval(b); err == nil || err.Error() != "1:3: overflow in BIGINT +" {
				t.Errorf("%s: eval error %v, want 1:3: overflow in BIGINT +", tt.src, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: bound without error, want %q", tt.src, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%s: error %q, want %q", tt.src, err.Error(), tt.want)
		}
		var se *sql.Error
		if strings.Contains(tt.want, ":1:") || strings.HasPrefix(tt.want, "1:") {
			if !errors.As(err, &se) {
				t.Errorf("%s: error %T is not a *sql.Error", tt.src, err)
			}
		}
	}
}

func TestBindPredicate(t *testing.T) {
	cols, b := testBatch(t)
	bd := &Binder{Columns: cols}
	for _, tt := range []struct{ src, want string }{
		{"i", "true|true|NULL|true|true"},
		{"j", "true|false|true|NULL|true"},
		{"b", "true|false|NULL|true|NULL"},
		{"NULL", "NULL|NULL|NULL|NULL|NULL"},
		{"s", "1:1: WHERE must be BOOLEAN, got VARCHAR"},
		{"d", "1:1: WHERE must be BOOLEAN, got DATE"},
	} {
		ast, err := sql.ParseExpr(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		e, err := bd.BindPredicate(ast, "WHERE")
		if err != nil {
			if err.Error() != tt.want {
				t.Errorf("%s: %v, want %s", tt.src, err, tt.want)
			}
			continue
		}
		if e.Type() != vec.Bool {
			t.Errorf("%s: type %s", tt.src, e.Type())
		}
		v, err := e.Eval(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatAll(v); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestReplace(t *testing.T) {
	// The planner's view after aggregation: column 0 is the group key
	// date_trunc(...), column 1 is count(*).
	cols := []vec.Column{{Name: "M", Type: vec.Timestamp}, {Name: "count_star", Type: vec.Int64}}
	key, _ := sql.ParseExpr("DATE_TRUNC('minute', toDateTime(EventTime))")
	agg, _ := sql.ParseExpr("count(*)")
	bd := &Binder{Columns: cols, Replace: func(e sql.Expr) (int, bool) {
		switch {
		case sql.Equal(e, key):
			return 0, true
		case sql.Equal(e, agg):
			return 1, true
		}
		return 0, false
	}}
	for _, src := range []string{
		"date_trunc('minute', todatetime(eventtime))",
		"COUNT(*) * 2 > 100000",
	} {
		ast, err := sql.ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		e, err := bd.Bind(ast)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if cs := Columns(e); len(cs) != 1 {
			t.Errorf("%s: Columns = %v", src, cs)
		}
	}
	ast, _ := sql.ParseExpr("count(*) + EventTime")
	if _, err := bd.Bind(ast); err == nil || !strings.Contains(err.Error(), `column "EventTime" not found`) {
		t.Errorf("unreplaced column: %v", err)
	}
}

func TestColumnsRemapSelect(t *testing.T) {
	cols, b := testBatch(t)
	ast, _ := sql.ParseExpr("s <> '' AND i > j OR f IS NULL")
	e, err := (&Binder{Columns: cols}).Bind(ast)
	if err != nil {
		t.Fatal(err)
	}
	if got := Columns(e); len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
		t.Errorf("Columns = %v", got)
	}
	v, err := e.Eval(b)
	if err != nil {
		t.Fatal(err)
	}
	// Rows: (true AND false) OR false = false; ('' <> '') ... OR true; NULL;
	// (true AND NULL) OR false = NULL; (true AND true) OR false = true.
	if got := formatAll(v); got != "false|true|NULL|NULL|true" {
		t.Fatalf("predicate = %s", got)
	}
	if sel := Select(v, nil); len(sel) != 2 || sel[0] != 1 || sel[1] != 4 {
		t.Errorf("Select = %v", sel)
	}
	// Narrow the batch to the 4 columns used and remap.
	nb := &vec.Batch{Len: b.Len, Vecs: []*vec.Vector{b.Vecs[3], b.Vecs[2], b.Vecs[1], b.Vecs[0]}}
	Remap(e, func(old int) int { return 3 - old })
	v2, err := e.Eval(nb)
	if err != nil {
		t.Fatal(err)
	}
	if formatAll(v2) != formatAll(v) {
		t.Errorf("after Remap: %s", formatAll(v2))
	}
}

func TestSelectAllNull(t *testing.T) {
	v := &vec.Vector{Type: vec.Bool, Len: 3, I64: []int64{1, 1, 0}, Valid: []bool{false, true, true}}
	if got := Select(v, make([]int32, 10)); len(got) != 1 || got[0] != 1 {
		t.Errorf("Select = %v", got)
	}
	if got := Select(&vec.Vector{Type: vec.Null, Len: 3}, nil); len(got) != 0 {
		t.Errorf("Select(NULL) = %v", got)
	}
}

func TestLikeMatcher(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"%google%", "http://www.google.com/", true},
		{"%google%", "http://www.goo.gle", false},
		{"%.google.%", "http://www.google.com/", true},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"a%", "a", true},
		{"%a", "ba", true},
		{"%", "", true},
		{"", "", true},
		{"", "a", false},
		{"_", "", false},
		{"_", "é", true},
		{"__", "é", false},
		{"a%b%c", "aXbYc", true},
		{"a%b%c", "aXcYb", false},
		{"a%bc", "abcbc", true},
		{"a%b", "ab", true},
		{"ab%ba", "aba", false},
		{"%a_c%", "xxabcxx", true},
		{"%a_c", "abcabd", false},
		{"a%%b", "ab", true},
		{"%aa%aa%", "aaa", false},
		{"%aa%aa%", "aaaa", true},
	}
	for _, tt := range tests {
		m := newLikeMatcher(tt.pat)
		if got := m.match([]byte(tt.s)); got != tt.want {
			t.Errorf("%q LIKE %q = %v, want %v (kind %d)", tt.s, tt.pat, got, tt.want, m.kind)
		}
		if got := likeMatch([]byte(tt.s), []byte(tt.pat)); got != tt.want {
			t.Errorf("general: %q LIKE %q = %v, want %v", tt.s, tt.pat, got, tt.want)
		}
	}
}

func TestConvertReplacement(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\1`, "${1}"},
		{`x\2y`, "x${2}y"},
		{`$1`, "$$1"},
		{`\\`, `\`},
		{`\0`, "${0}"},
		{`a\`, `a\`},
	}
	for _, tt := range tests {
		if got := convertReplacement(tt.in); got != tt.want {
			t.Errorf("convertReplacement(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCivil(t *testing.T) {
	for days := int64(-800000); days <= 800000; days += 97 {
		y, m, d := civil(days)
		if back := daysFromCivil(y, m, d); back != days {
			t.Fatalf("civil(%d) = %d-%d-%d, back %d", days, y, m, d, back)
		}
	}
	if y, m, d := civil(15887); y != 2013 || m != 7 || d != 1 {
		t.Errorf("civil(15887) = %d-%d-%d", y, m, d)
	}
}

func TestConstBroadcastAndEmptyBatch(t *testing.T) {
	cols, _ := testBatch(t)
	ast, _ := sql.ParseExpr("i + 1 > 0 AND s LIKE '%a%'")
	e, err := (&Binder{Columns: cols}).Bind(ast)
	if err != nil {
		t.Fatal(err)
	}
	empty := &vec.Batch{}
	for _, c := range cols {
		empty.Vecs = append(empty.Vecs, vec.NewVector(c.Type, 0))
	}
	v, err := e.Eval(empty)
	if err != nil || v.Len != 0 {
		t.Fatalf("empty batch: %v, %v", v, err)
	}
}

func TestSubstrExtremes(t *testing.T) {
	for _, src := range []string{
		"substr(s, 2, 9223372036854775807)", "substr(s, -9223372036854775807, 9223372036854775807)",
		"substr(s, 9223372036854775807, 1)", "substr(s, -9223372036854775807)",
	} {
		if _, _, err := evalSQL(t, src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	if _, v, _ := evalSQL(t, "substr(s, 2, 9223372036854775807)"); formatAll(v) != "ello||NULL|örld|'b%c" {
		t.Errorf("got %s", formatAll(v))
	}
}

func TestFold(t *testing.T) {
	sum := &arith{op: sql.OpAdd, l: NewConst(vec.Int64, 2), r: NewConst(vec.Int64, 3), t: vec.Int64}
	outer := &arith{op: sql.OpMul, l: &ColumnRef{Index: 0, T: vec.Int64, Name: "x"}, r: sum, t: vec.Int64}
	f, err := Fold(outer)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != "(x * 5)" {
		t.Errorf("Fold = %s, want (x * 5)", got)
	}
	f, err = Fold(sum)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := f.(*Const); !ok || c.Int() != 5 {
		t.Errorf("Fold(2 + 3) = %v", f)
	}
	bad := &arith{op: sql.OpAdd, l: NewConst(vec.Int64, int64(1)<<62), r: NewConst(vec.Int64, int64(1)<<62), t: vec.Int64}
	if _, err := Fold(bad); err == nil {
		t.Error("Fold of an overflowing sum succeeded")
	}
}

// TestRegressions holds expressions that the differential test against
// DuckDB found wrong, with DuckDB's answer (a constant folded at bind time)
// or its error.
func TestRegressions(t *testing.T) {
	tests := []struct{ src, want, err string }{
		{"CAST(-9223372036854775808 AS BIGINT) // -1", "", "overflow in BIGINT //"},
		{"CAST(-9223372036854775808 AS BIGINT) % -1", "0", ""},
		{"CAST(1920 AS SMALLINT) IN (1920, 100000)", "true", ""},
		{"CAST(7 AS SMALLINT) IN (1920, 100000)", "false", ""},
		{"CAST(7 AS SMALLINT) NOT IN (100000)", "true", ""},
		{"'NaN'::DOUBLE = 'NaN'::DOUBLE", "true", ""},
		{"'NaN'::DOUBLE > 'Infinity'::DOUBLE", "true", ""},
		{"'NaN'::DOUBLE IN (1, 'NaN'::DOUBLE)", "true", ""},
		{"-0.0 = 0.0", "true", ""},
		{"'NaN'::DOUBLE < 1", "false", ""},
		{"DATE '9999-12-31' + 7", "10000-01-07", ""},
		{"DATE '2013-07-01' + 2147483647", "", "DATE out of range"},
		{"DATE '2013-07-01' - 9223372036854775807", "", "DATE out of range"},
		{"TIMESTAMP '2013-07-01 00:00:00' + INTERVAL 9223372036854775 SECOND", "", "out of range"},
	}
	for _, tt := range tests {
		ast, err := sql.ParseExpr(tt.src)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.src, err)
		}
		e, err := (&Binder{}).Bind(ast)
		if err == nil {
			var v *vec.Vector
			if v, err = e.Eval(&vec.Batch{Len: 1}); err == nil && v.Format(0) != tt.want {
				t.Errorf("%s = %s, want %s", tt.src, v.Format(0), tt.want)
			}
		}
		if (err != nil) != (tt.err != "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want %q", tt.src, err, tt.err)
		}
	}
}

// TestBuiltinTable checks the function table's entries: unique lower-case
// names, a sane arity, and either types with an implementation or a
// binder; and that every name binds with its minimum number of arguments
// or fails with a positioned error, never a panic.
func TestBuiltinTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Builtins() {
		if f.Doc == "" || f.MinArgs < 0 || f.MaxArgs < f.MinArgs {
			t.Errorf("%v: bad entry", f.Names)
		}
		if f.Bind == nil && (f.Impl == nil || len(f.Args) == 0) {
			t.Errorf("%v: neither a binder nor types and an implementation", f.Names)
		}
		for _, n := range f.Names {
			if seen[n] || n != strings.ToLower(n) {
				t.Errorf("%s: duplicate or not lower case", n)
			}
			seen[n] = true
			args := strings.TrimSuffix(strings.Repeat("'1', ", f.MinArgs), ", ")
			ast, err := sql.ParseExpr(n + "(" + args + ")")
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			if _, err := (&Binder{}).Bind(ast); err != nil {
				var se *sql.Error
				if !errors.As(err, &se) {
					t.Errorf("%s(%s): error %v is not a *sql.Error", n, args, err)
				}
			}
		}
	}
	if _, ok := LookupBuiltin("no_such_function"); ok {
		t.Error("LookupBuiltin found no_such_function")
	}
}
