package difftest

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSLT runs our own sqllogictest files, testdata/slt/*.test, on
// cachebook, each expected result checked against DuckDB too: every query
// must pass. With CACHEBOOK_DUCKDB_SLT=DIR it runs every *.test file under
// DIR instead (DuckDB's test/sql/aggregate, say, which is not committed
// here) and logs the counts: pass, unsupported by feature, wrong, errors;
// only a wrong answer fails the test.
func TestSLT(t *testing.T) {
	dir, external := os.Getenv("CACHEBOOK_DUCKDB_SLT"), true
	if dir == "" {
		dir, external = filepath.Join("testdata", "slt"), false
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".test") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no .test files under %s", dir)
	}
	r := &SLTRunner{Dir: t.TempDir(), VerifyDuck: !external}
	var all []SLTOutcome
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(dir, f)
		outs, err := r.RunFile(context.Background(), name, string(src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, o := range outs {
			bad := o.Status == "wrong" || (!external && o.Status != "pass")
			if bad {
				t.Errorf("%s:%d: %s\n%s\n%s", o.File, o.Line, o.Status, o.SQL, o.Detail)
			} else if external && testing.Verbose() && o.Status != "pass" && o.Status != "skip" {
				q := strings.Join(strings.Fields(o.SQL), " ")
				t.Logf("%s:%d: %s: %s\n\t%.160s", o.File, o.Line, o.Status, firstLineOf(o.Detail), q)
			}
		}
		all = append(all, outs...)
	}
	s := Summarize(all)
	t.Logf("%d files, %d query records: %s", len(files), len(all), countLine(s.Counts))
	for _, m := range []struct {
		name string
		c    map[string]int
	}{{"unsupported", s.Features}, {"errors", s.Errors}} {
		keys := slices.SortedFunc(maps.Keys(m.c), func(a, b string) int { return m.c[b] - m.c[a] })
		for _, k := range keys {
			t.Logf("%s %4d  %s", m.name, m.c[k], k)
		}
	}
}

func countLine(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// TestCompareSLT checks the comparison of a result with a file's expected
// lines: sort modes, row and value layouts, hashes, numbers and booleans.
func TestCompareSLT(t *testing.T) {
	rows := [][]string{{"2", "b"}, {"1", "a"}}
	for _, tc := range []struct {
		rec  SLTRecord
		rows [][]string
		ok   bool
	}{
		{SLTRecord{Types: "IT", Sort: "rowsort", Expected: []string{"1\ta", "2\tb"}}, rows, true},
		{SLTRecord{Types: "IT", Sort: "nosort", Expected: []string{"1\ta", "2\tb"}}, rows, false},
		{SLTRecord{Types: "IT", Sort: "nosort", Expected: []string{"2", "b", "1", "a"}}, rows, true},
		{SLTRecord{Types: "IT", Sort: "valuesort", Expected: []string{"1", "2", "a", "b"}}, rows, true},
		{SLTRecord{Types: "IT", Sort: "rowsort", Expected: []string{"1\ta"}}, rows, false},
		{SLTRecord{Types: "IT", Sort: "rowsort", Expected: []string{"4 values hashing to 0c6a0fd6a6aefc1bb4cbe5eb3f6a7d4e"}}, rows, false},
		{SLTRecord{Types: "R", Expected: []string{"0.30000000000000004"}}, [][]string{{"0.3"}}, true},
		{SLTRecord{Types: "R", Expected: []string{"0.31"}}, [][]string{{"0.3"}}, false},
		{SLTRecord{Types: "I", Expected: []string{"101"}}, [][]string{{"100"}}, false},
		{SLTRecord{Types: "T", Expected: []string{"true"}}, [][]string{{"1"}}, true},
		{SLTRecord{Types: "I", Expected: []string{"NULL"}}, [][]string{{"NULL"}}, true},
		{SLTRecord{Types: "I", Expected: []string{" 1"}}, [][]string{{"1"}}, true},
	} {
		if got := compareSLT(tc.rec, tc.rows) == ""; got != tc.ok {
			t.Errorf("%+v with %v: equal %v, want %v", tc.rec, tc.rows, got, tc.ok)
		}
	}
	// The hash of DuckDB's runner: every value and a newline, sorted.
	h := "4 values hashing to " + md5Hex("1\na\n2\nb\n")
	if m := compareSLT(SLTRecord{Types: "IT", Sort: "rowsort", Expected: []string{h}}, rows); m != "" {
		t.Errorf("hash: %s", m)
	}
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestParseSLT checks the records a file yields.
func TestParseSLT(t *testing.T) {
	src := "# c\nstatement ok\nCREATE TABLE t (i INT)\n\nquery I rowsort lbl\nSELECT 1\n----\n1\n\nloop i 0 2\nquery I\nSELECT 2\n----\n2\n\nendloop\n\nskipif duckdb\nquery I\nSELECT 3\n----\n3\n"
	f := ParseSLT(src)
	if len(f.Records) != 4 {
		t.Fatalf("%d records, want 4: %+v", len(f.Records), f.Records)
	}
	r := f.Records[1]
	if !r.Query || r.Sort != "rowsort" || r.Label != "lbl" || r.SQL != "SELECT 1" || len(r.Expected) != 1 {
		t.Errorf("query record %+v", r)
	}
	if f.Records[2].Skip == "" || f.Records[3].Skip == "" {
		t.Errorf("records in a loop and after skipif duckdb are not skipped: %+v", f.Records[2:])
	}
	if ParseSLT("require tpch\n").Skip == "" {
		t.Error("require tpch does not skip the file")
	}
}
