package difftest

import (
	"context"
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
