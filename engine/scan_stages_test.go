package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// stageRow is the schema of the staged-filter test table: fixed-width
// columns of every integer width, PLAIN and dictionary-encoded, with and
// without NULLs, a float, and a string.
type stageRow struct {
	ID  int64   `parquet:"id"`
	A   int32   `parquet:"a"`           // one row in 13 is 62
	B   int16   `parquet:"b"`           // mostly 0
	C   uint16  `parquet:"c"`           // a date-like range
	D   int64   `parquet:"d,dict"`      // dictionary
	OA  *int32  `parquet:"oa,optional"` // NULLs
	OD  *int64  `parquet:"od,optional,dict"`
	F   float64 `parquet:"f"`
	S   string  `parquet:"s"`
	U8  uint8   `parquet:"u8"`
	OU8 *uint8  `parquet:"ou8,optional"`
}

func stageTable(t *testing.T, dir string, n int) {
	t.Helper()
	rows := make([]stageRow, n)
	for i := range rows {
		r := stageRow{ID: int64(i), A: int32(i * 7919 % 13 * 5), B: int16(i % 11 / 10), C: uint16(15888 + i%31),
			D: int64(i % 5), F: float64(i%17) / 4, S: fmt.Sprintf("s%d", i%23), U8: uint8(i % 251)}
		if i%3 != 0 {
			x := int32(i % 7)
			r.OA = &x
		}
		if i%4 != 1 {
			x := int64(i % 9)
			r.OD = &x
		}
		if i/500%3 != 1 { // runs of NULLs
			x := uint8(i % 3)
			r.OU8 = &x
		}
		rows[i] = r
	}
	f, err := os.Create(filepath.Join(dir, "st.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := parquet.NewGenericWriter[stageRow](f, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(20_000), parquet.PageBufferSize(4096))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFilterStages: a streamed scan's filter evaluated a column at a
// time, each next column read for the rows left only, answers as the
// filter evaluated over the columns converted whole: every integer
// width, dictionaries, NULLs, none and all rows passing, a stage that
// empties a morsel, conjuncts beside a string conjunct (the filter
// split), and filters the stages do not apply to; EXPLAIN ANALYZE says
// what it did.
func TestFilterStages(t *testing.T) {
	dir := t.TempDir()
	stageTable(t, dir, 50_000) // row groups of 20,000, 20,000, 10,000 rows
	conds := []string{
		"a = 60 AND b = 0",
		"a = 60 AND b = 0 AND c >= 15890 AND c <= 15900",
		"b = 0 AND a = 60 AND d = 3",
		"a = 60 AND oa IS NULL",
		"a = 60 AND oa = 2 AND od > 3",
		"od IS NOT NULL AND a <> 60 AND ou8 = 1",
		"ou8 IS NULL AND a = 5",
		"a = 61 AND b = 0",    // none
		"a >= 0 AND b >= 0",   // all
		"c = 15888 AND a = 0", // the second stage empties some morsels
		"a = 60 AND f > 2.5 AND u8 < 100",
		"a = 60 AND b = 0 AND s <> 's3'",                   // split: the early conjuncts staged
		"a = 60 AND b = 0 AND s LIKE 's1%'",                // split, a LIKE late
		"a = 60 AND (b = 0 OR c = 15888)",                  // a conjunct of two columns: no stages
		"a = 60 AND c > 15890 AND (s = 's3' OR c = 15900)", // late reads an early column
		"a = 60 AND (s = 's3' OR b = 1)",                   // late reads a column early does not
		"a + b = 60 AND d = 3",                             // a conjunct of two columns: no stages
		"a = 60 AND a < 100 AND b = 0 AND b >= 0",          // two conjuncts a stage
		"id % 1000 = 7 AND oa IS NOT NULL AND d < 4",       // sparse
	}
	session := func(stages bool, threads string) *Session {
		db, err := Open(Options{DataDir: dir, CacheBytes: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		db.noFilterStages = !stages
		db.noStringPush = !stages // and the late conjuncts' push
		s := db.NewSession()
		if err := s.Set("threads", threads); err != nil {
			t.Fatal(err)
		}
		return s
	}
	threads := []string{"1", "2"}
	if raceSlowdown > 1 {
		threads = threads[1:]
	}
	for _, threads := range threads {
		for _, cond := range conds {
			for _, q := range []string{
				"SELECT id, a, b, c, d, oa, od, f, s, u8, ou8 FROM st WHERE " + cond + " ORDER BY id",
				"SELECT count(*), sum(oa), min(od), max(s), sum(ou8) FROM st WHERE " + cond,
				"SELECT count(*) FROM st WHERE " + cond,
			} {
				got, want := runSQL(t, session(true, threads), q), runSQL(t, session(false, threads), q)
				if got != want {
					t.Errorf("threads %s: %s:\ngot  %.300q\nwant %.300q", threads, q, got, want)
				}
			}
		}
	}
	for _, tc := range []struct {
		q, want string
		staged  bool
	}{
		{"SELECT count(*), sum(d) FROM st WHERE a = 60 AND b = 0", "filter tested a column at a time, each next column read for the rows left only: ", true},
		{"SELECT count(*), sum(d) FROM st WHERE a = 60 AND b = 0", "(CAST(b AS BIGINT) = 0) (", true},
		{"SELECT count(*) FROM st WHERE a = 60 AND b = 0 AND s LIKE 's1%'", "filter tested a column at a time", true},
		{"SELECT count(*) FROM st WHERE a = 60 AND b = 0 AND s LIKE 's1%'", "filter (s LIKE 's1%') tested as s is read for the ", true},
		{"SELECT max(s) FROM st WHERE a = 60 AND b = 0 AND s <> ''", "filter (s <> '') tested as s is read for the ", true},
		{"SELECT count(*) FROM st WHERE a = 60 AND (b = 0 OR c = 15888)", "", false},
		{"SELECT count(*) FROM st WHERE a = 60", "", false},
	} {
		got := runSQL(t, session(true, "2"), "EXPLAIN ANALYZE "+tc.q)
		if tc.staged != strings.Contains(got, "a column at a time") || !strings.Contains(got, tc.want) {
			t.Errorf("EXPLAIN ANALYZE %s: staged %v, want %v, %q:\n%s", tc.q, !tc.staged, tc.staged, tc.want, strings.ReplaceAll(got, ";", "\n"))
		}
		if got := runSQL(t, session(false, "2"), "EXPLAIN ANALYZE "+tc.q); strings.Contains(got, "a column at a time") || strings.Contains(got, "tested as") {
			t.Errorf("EXPLAIN ANALYZE %s with the stages off: %s", tc.q, strings.ReplaceAll(got, ";", "\n"))
		}
	}
}
