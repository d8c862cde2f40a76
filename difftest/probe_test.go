package difftest

import (
	"context"
	"flag"
	"strings"
	"testing"

	"cachebook/engine"
)

var probe = flag.String("probe", "", "queries separated by ';;' to run on both engines and print (debugging)")

// TestProbe runs the queries given with -probe on DuckDB and on our engine
// with every strategy over the random tester's tables and prints the first
// rows of each answer, for investigating a mismatch:
//
//	go test -run TestProbe -v . -args -probe "SELECT …;;SELECT …"
func TestProbe(t *testing.T) {
	if *probe == "" {
		t.Skip("no -probe")
	}
	ctx := context.Background()
	dir := t.TempDir()
	duck, err := OpenDuck(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	if err := WriteRandomTables(ctx, duck, dir); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(engine.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	env := &randomEnv{duck: duck, ours: db}
	for _, q := range strings.Split(*probe, ";;") {
		for _, f := range env.check(ctx, q) {
			t.Logf("DIFF %s", f)
		}
		ref, err := DuckQuery(ctx, duck, q)
		if err != nil {
			t.Logf("duck error: %v", err)
		} else {
			t.Logf("duck %s: %d rows %v", q, len(ref.Rows), head(ref.Rows))
		}
		for _, st := range strategies {
			got, err := OursQuery(ctx, db.NewSession(), st.set+"; "+q)
			if err != nil {
				t.Logf("  ours[%s] error: %v", st.name, err)
				continue
			}
			t.Logf("  ours[%s]: %d rows %v", st.name, len(got.Rows), head(got.Rows))
		}
	}
}
