package engine

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// statsRow is a table whose row groups (of 300 rows) hold a column of
// NULLs only, unsigned values beyond 2^31 and every integer width.
type statsRow struct {
	ID    int64   `parquet:"id"`
	Some  *int32  `parquet:"some,optional"` // NULL in every row group but the second
	None  *int64  `parquet:"none,optional"` // NULL everywhere
	U32   uint32  `parquet:"u32"`
	U16   uint16  `parquet:"u16"`
	U8    uint8   `parquet:"u8"`
	I16   int16   `parquet:"i16"`
	U64   uint64  `parquet:"u64"`
	Day   int32   `parquet:"day,date"`
	F     float64 `parquet:"f"`
	Label string  `parquet:"label"`
}

func statsDB(t *testing.T) *DB {
	t.Helper()
	dir := t.TempDir()
	var rows []statsRow
	for i := 0; i < 1000; i++ {
		r := statsRow{ID: int64(i) - 500, U32: uint32(i) * 4000000, U16: uint16(65535 - i), U8: uint8(i % 256),
			I16: int16(i - 700), U64: math.MaxUint64 - uint64(i), Day: int32(15887 + i%31), F: float64(i) / 3,
			Label: string(rune('a' + i%26))}
		if i >= 300 && i < 600 && i%3 == 0 {
			r.Some = ptr(int32(i) * -7)
		}
		rows = append(rows, r)
	}
	writeParquet(t, filepath.Join(dir, "st.parquet"), rows)
	writeParquet(t, filepath.Join(dir, "stempty.parquet"), []statsRow{})
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestStatsAggregate: MIN and MAX of integer and date columns (and
// COUNT(*)) over a whole table come from the row groups' statistics and
// equal what a scan finds; other aggregates, a WHERE clause or a type the
// statistics do not answer keep the scan.
func TestStatsAggregate(t *testing.T) {
	db := statsDB(t)
	s := db.NewSession()
	tests := []struct {
		sql   string
		stats bool
		want  string // "" when checked against the scan only
	}{
		{"SELECT min(id), max(id), count(*) FROM st", true, "-500,499,1000"},
		{"SELECT min(some), max(some) FROM st", true, "-4179,-2100"},
		{"SELECT min(none), max(none), count(*) FROM st", true, "NULL,NULL,1000"},
		{"SELECT min(u32), max(u32) FROM st", true, "0,3996000000"},
		{"SELECT min(u16), max(u16), min(u8), max(u8), min(i16), max(i16) FROM st", true, "64536,65535,0,255,-700,299"},
		{"SELECT min(day), max(day) FROM st", true, "2013-07-01,2013-07-31"},
		{"SELECT max(id) - min(id) AS span FROM st", true, "999"},
		{"SELECT min(id) FROM st HAVING count(*) > 1000", true, ""},
		{"SELECT min(id), max(day), count(*) FROM stempty", true, "NULL,NULL,0"},
		// Not from the statistics.
		{"SELECT min(id), max(id) FROM st WHERE id > 0", false, "1,499"},
		{"SELECT min(id), sum(id) FROM st", false, "-500,-500"},
		{"SELECT min(u64), max(u64) FROM st", false, ""},
		{"SELECT min(f), max(f) FROM st", false, ""},
		{"SELECT min(label), max(label) FROM st", false, "a,z"},
		{"SELECT min(id + 1) FROM st", false, "-499"},
		{"SELECT any_value(id) FROM st", false, ""},
		{"SELECT count(*) FROM st", false, "1000"},
		{"SELECT min(id) FROM st GROUP BY 1 = 1", false, "-500"},
	}
	for _, tc := range tests {
		plan := runSQL(t, s, "EXPLAIN "+tc.sql)
		if got := strings.Contains(plan, "answered from row-group statistics"); got != tc.stats {
			t.Errorf("%s: from statistics %v, want %v:\n%s", tc.sql, got, tc.stats, plan)
		}
		got := runSQL(t, s, tc.sql)
		if tc.want != "" && got != tc.want {
			t.Errorf("%s:\n got  %q\n want %q", tc.sql, got, tc.want)
		}
		// The same query with a WHERE clause that passes every row scans.
		scanned := tc.sql
		if !strings.Contains(scanned, "WHERE") {
			for _, from := range []string{" FROM stempty", " FROM st"} {
				if strings.Contains(scanned, from) {
					scanned = strings.Replace(scanned, from, from+" WHERE id IS NOT NULL", 1)
					break
				}
			}
		}
		if want := runSQL(t, s, scanned); got != want {
			t.Errorf("%s: %q, but a scan finds %q", tc.sql, got, want)
		}
	}
	got := runSQL(t, s, "EXPLAIN SELECT min(none), min(id) FROM st")
	if !strings.Contains(got, "of 4 row groups") || !strings.Contains(got, "4 column chunks of NULLs only") || strings.Contains(got, "SEQ_SCAN") {
		t.Errorf("EXPLAIN should count 4 row groups, 4 chunks of NULLs and no scan:\n%s", got)
	}
}

// TestAlwaysTrue: a WHERE conjunct that every row group's statistics
// prove true (over a REQUIRED column) is not evaluated; any other stays.
func TestAlwaysTrue(t *testing.T) {
	db := statsDB(t)
	s := db.NewSession()
	tests := []struct {
		sql    string
		proven string // "" when nothing is proven
		want   string
	}{
		{"SELECT count(*) FROM st WHERE day >= '2013-07-01' AND day <= DATE '2013-07-31'",
			"day >= '2013-07-01' AND day <= DATE '2013-07-31'", "1000"},
		{"SELECT count(*) FROM st WHERE day > '2013-07-01'", "", "967"},
		{"SELECT count(*), min(id) FROM st WHERE id >= -500 AND id < 0", "id >= -500", "500,-500"},
		{"SELECT count(*) FROM st WHERE -500 <= id AND 499 >= id AND i16 <= 299 AND u16 >= 64536", "-500 <= id AND 499 >= id AND i16 <= 299 AND u16 >= 64536", "1000"},
		{"SELECT count(*) FROM st WHERE some >= -100000", "", "100"},
		{"SELECT count(*) FROM st WHERE id = 5", "", "1"},
		{"SELECT count(*) FROM st WHERE id >= -500.5", "", "1000"},
		{"SELECT count(*) FROM st WHERE id >= -500 OR some = 1", "", "1000"},
		{"SELECT id FROM st WHERE id > -1000 AND label = 'c' ORDER BY id LIMIT 2", "id > -1000", "-498;-472"},
	}
	for _, tc := range tests {
		plan := runSQL(t, s, "EXPLAIN "+tc.sql)
		const line = "true for every row by the row-group statistics, not evaluated: "
		got := ""
		if i := strings.Index(plan, line); i >= 0 {
			got = plan[i+len(line):]
			got = strings.TrimSpace(got[:strings.IndexAny(got+";", ";")])
		}
		if got != tc.proven {
			t.Errorf("%s: proven %q, want %q:\n%s", tc.sql, got, tc.proven, plan)
		}
		if got := runSQL(t, s, tc.sql); got != tc.want {
			t.Errorf("%s:\n got  %q\n want %q", tc.sql, got, tc.want)
		}
	}
}
