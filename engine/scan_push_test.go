package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// pushRow is the schema of the push-down test table: string columns of
// every encoding a streamed scan tests as it reads them, empty strings
// and NULLs among their values.
type pushRow struct {
	ID int64   `parquet:"id"`
	P  string  `parquet:"p,plain"`          // PLAIN, required
	D  string  `parquet:"d,dict"`           // dictionary, required, '' an entry
	OD *string `parquet:"od,optional,dict"` // dictionary, NULLs
	OP *string `parquet:"op,optional"`      // PLAIN, NULLs
	// Dictionary pages, then PLAIN ones past the dictionary's limit.
	G string `parquet:"g,dict"`
}

func pushTable(t *testing.T, dir string, n int) {
	t.Helper()
	rows := make([]pushRow, n)
	for i := range rows {
		r := pushRow{ID: int64(i), D: []string{"", "apple", "", "", "banana", "", "avocado", "", "", ""}[i%10]}
		if i%9 == 0 || i/1000%7 == 3 { // runs of rows without a passing one
			r.P = fmt.Sprintf("p%d%s", i, strings.Repeat("a", i%5))
		}
		if i%4 != 1 {
			s := []string{"", "alpha", "beta"}[i%3]
			r.OD = &s
		}
		if i%5 != 2 {
			s := ""
			if i%2 == 0 {
				s = fmt.Sprintf("a%d", i)
			}
			r.OP = &s
		}
		if k := i % 20_000; k < 3000 {
			r.G = []string{"", "ab", "b"}[k%3]
		} else if k%3 == 0 {
			r.G = fmt.Sprintf("a-%d", i)
		}
		rows[i] = r
	}
	f, err := os.Create(filepath.Join(dir, "pt.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := parquet.NewGenericWriter[pushRow](f, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(20_000), parquet.PageBufferSize(2048), parquet.DictionaryMaxBytes(512))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStringPush: a filter of string columns tested as the column is
// read (on dictionaries, on the strings' lengths, on converted values)
// answers as the filter evaluated over the converted columns, for every
// encoding, NULLs, none and all rows passing, other conjuncts beside,
// at one and two threads; EXPLAIN ANALYZE says what it did.
func TestStringPush(t *testing.T) {
	dir := t.TempDir()
	pushTable(t, dir, 50_000) // row groups of 20,000, 20,000, 10,000 rows
	var conds []string
	for _, c := range []string{"p", "d", "od", "op", "g"} {
		conds = append(conds,
			c+" <> ''",
			c+" = ''",
			c+" LIKE 'a%'",
			c+" IS NULL",
			c+" IS NOT NULL",
			c+" IN ('apple', 'beta', 'a10')",
			c+" = 'none'",
			c+" <> 'none'",
			c+" > 'b'",
			c+" <> '' AND id % 3 = 0",
			c+" <> '' AND id < 15000",
			c+" <> '' AND length("+c+") > 4",
			"id >= 0 AND "+c+" NOT LIKE '%a%'",
		)
	}
	conds = append(conds,
		"d <> '' AND p <> ''",
		"od = 'alpha' AND op LIKE 'a%'",
		"p <> '' AND op LIKE '%1%' AND id % 2 = 0",
		"d <> '' AND op LIKE '%1%'",   // the other column read whole
		"p <> '' AND od = 'beta'",     // by the rows p passes
		"d = 'banana' AND op <> ''",   // op's emptiness pushed, not d
		"p = 'p9' AND op IS NOT NULL", // one row: op converted for it alone
		"p LIKE 'p1%' AND p <> 'p10'", // both pushed, on the values
		"od <> '' AND op <> '' AND p = ''",
		// The other columns read in stages, each narrowing the next.
		"p <> '' AND op LIKE '%1%' AND g LIKE 'a%'",
		"d <> '' AND op LIKE '%0%' AND od = 'alpha' AND id % 3 = 0",
		"p <> '' AND g = 'none' AND op <> ''", // none left for op
		"od <> '' AND (op LIKE '%1%' OR g = 'ab') AND id > 100",
		"p <> '' AND length(p) > 3 AND op LIKE '%2%'",
		"d = 'apple' AND op NOT LIKE '%3%' AND g <> '' AND od IS NULL",
	)
	// A cache too small to keep any chunk, fresh for each query: every
	// row group is read page by page (Reader.PassOnce).
	session := func(push bool, threads string) *Session {
		db, err := Open(Options{DataDir: dir, CacheBytes: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		db.noStringPush = !push
		s := db.NewSession()
		if err := s.Set("threads", threads); err != nil {
			t.Fatal(err)
		}
		return s
	}
	threads := []string{"1", "2"}
	if raceSlowdown > 1 {
		// Under the race detector: two threads, every third condition.
		threads = threads[1:]
		var some []string
		for i := 0; i < len(conds); i += 3 {
			some = append(some, conds[i])
		}
		conds = some
	}
	for _, threads := range threads {
		for _, cond := range conds {
			for _, q := range []string{
				"SELECT id, p, d, od, op, g FROM pt WHERE " + cond + " ORDER BY id",
				"SELECT count(*), min(d), max(od), sum(length(op)) FROM pt WHERE " + cond,
			} {
				got, want := runSQL(t, session(true, threads), q), runSQL(t, session(false, threads), q)
				if got != want {
					t.Errorf("threads %s: %s:\ngot  %.300q\nwant %.300q", threads, q, got, want)
				}
			}
		}
	}
	// Columns read above the scan only as strlen(col) are handed on as
	// their strings' lengths, whether or not the filter tests them,
	// streamed or decoded whole (the second read of a cache that keeps
	// the chunks).
	var lengthQueries []string
	for _, cond := range []string{"p <> ''", "op <> ''", "op LIKE 'a1%'", "g = ''", "od IS NULL", "id % 4 = 0", "p <> '' AND od <> ''"} {
		lengthQueries = append(lengthQueries,
			"SELECT count(*), sum(strlen(op)), avg(strlen(p)), max(octet_length(g)) FROM pt WHERE "+cond,
			"SELECT strlen(od) AS l, count(*), sum(strlen(op)) FROM pt WHERE "+cond+" GROUP BY l ORDER BY l",
			"SELECT id, strlen(op), strlen(p) + 1 FROM pt WHERE "+cond+" ORDER BY id",
			"SELECT count(DISTINCT strlen(g)), count(strlen(op)) FROM pt WHERE "+cond,
			"SELECT strlen(op), op FROM pt WHERE "+cond+" ORDER BY id LIMIT 5", // op read whole
		)
	}
	for _, q := range lengthQueries {
		on, err := Open(Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		son := on.NewSession()
		want := runSQL(t, session(false, "2"), q)
		if got := runSQL(t, session(true, "2"), q); got != want {
			t.Errorf("streamed: %s:\ngot  %.300q\nwant %.300q", q, got, want)
		}
		for read := 1; read <= 2; read++ {
			if got := runSQL(t, son, q); got != want {
				t.Errorf("read %d: %s:\ngot  %.300q\nwant %.300q", read, q, got, want)
			}
		}
		on.Close()
	}
	for _, tc := range []struct{ q, want string }{
		{"SELECT avg(strlen(p)) FROM pt WHERE p <> ''", "p: read only as strlen(p): its strings' byte lengths handed on"},
		{"SELECT avg(strlen(p)) FROM pt WHERE p <> ''", "filter (p <> '') tested as p is read: only the passing rows' byte lengths kept, no string copied (50000 rows on the strings' lengths)"},
		{"SELECT id, d FROM pt WHERE d <> ''", "filter (d <> '') tested as d is read: only the passing rows' strings copied (50000 rows on the dictionary"},
		{"SELECT id, p FROM pt WHERE p <> ''", "filter (p <> '') tested as p is read: only the passing rows' strings copied (50000 rows on the strings' lengths)"},
		{"SELECT id FROM pt WHERE op LIKE 'a%'", "50000 rows on their values"},
		{"SELECT id FROM pt WHERE g <> ''", "rows on the strings' lengths"},
		{"SELECT id FROM pt WHERE g <> ''", "rows on the dictionary"},
		{"SELECT id, p FROM pt WHERE p LIKE '%1%'", "50000 rows on their values where they lie in the page"},
		{"SELECT id FROM pt WHERE g LIKE 'a-1%'", "rows on their values where they lie in the page"},
		{"SELECT id FROM pt WHERE p <> '' AND op LIKE '%1%' AND g LIKE 'a%'", "in turn, each narrowing the rows the next reads: op (then (op LIKE '%1%')), g (then (g LIKE 'a%'))"},
	} {
		got := runSQL(t, session(true, "2"), "EXPLAIN ANALYZE "+tc.q)
		if !strings.Contains(got, tc.want) {
			t.Errorf("EXPLAIN ANALYZE %s: no %q:\n%s", tc.q, tc.want, strings.ReplaceAll(got, ";", "\n"))
		}
		if got := runSQL(t, session(false, "2"), "EXPLAIN ANALYZE "+tc.q); strings.Contains(got, "tested as") {
			t.Errorf("EXPLAIN ANALYZE %s with the push-down off: %s", tc.q, strings.ReplaceAll(got, ";", "\n"))
		}
	}
}
