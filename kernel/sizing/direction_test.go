package sizing

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/kernel/internal/timing"
)

// lessonDB is an engine over the keys table sized as the server sizes it
// for the lessons (ForRuntime with the default budget), shared by the
// direction tests of one run.
var lessonDB = sync.OnceValues(func() (*lessonData, error) {
	plan := ForMachine(ServerBudget(0))
	db, err := engine.Open(engine.Options{MaxThreads: 2})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := plan.Register(context.Background(), db, 1); err != nil {
		return nil, err
	}
	return &lessonData{db: db, plan: plan, gen: time.Since(t0)}, nil
})

type lessonData struct {
	db   *engine.DB
	plan Plan
	gen  time.Duration
}

func lesson(t *testing.T) *lessonData {
	t.Helper()
	d, err := lessonDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (generated in %v)", d.plan, d.gen.Round(time.Millisecond))
	return d
}

// timeSQL runs the statements of src on a fresh session and returns the
// elapsed time of the last one.
func timeSQL(t *testing.T, db *engine.DB, src string) time.Duration {
	t.Helper()
	res, err := db.NewSession().Exec(context.Background(), src, nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return res[len(res)-1].Elapsed
}

// ratioDirection times slow and fast side by side, once each after a
// warm-up of both, and wants slow/fast ≥ margin, taking the best of three
// tries.
func ratioDirection(t *testing.T, db *engine.DB, rows int64, slowName, slow, fastName, fast string, margin float64) {
	t.Helper()
	timeSQL(t, db, slow)
	timeSQL(t, db, fast)
	best := 0.0
	timing.Eventually(t, func() string {
		s, f := timeSQL(t, db, slow), timeSQL(t, db, fast)
		r := float64(s) / float64(f)
		best = max(best, r)
		t.Logf("%s %.1f ns/row, %s %.1f ns/row: %.2f×", slowName, float64(s)/float64(rows), fastName, float64(f)/float64(rows), r)
		if r >= margin {
			return ""
		}
		return fmt.Sprintf("%s/%s = %.2f×, want ≥ %.2f×", slowName, fastName, r, margin)
	})
}

const groupBy = "SELECT k, count(*) FROM keys GROUP BY k ORDER BY 2 DESC LIMIT 10"

// TestTableThatFitsDirection is lesson 2's comparison: the same rows, the
// same order, one thread, the naive strategy, grouped by s (1000 keys, a
// table in L1) and by k (a table sized against the L3): k costs more per row.
func TestTableThatFitsDirection(t *testing.T) {
	timing.Skip(t)
	d := lesson(t)
	ratioDirection(t, d.db, d.plan.Rows,
		"naive GROUP BY k", "SET threads = 1; SET group_by = 'naive'; "+groupBy,
		"naive GROUP BY s", "SET threads = 1; SET group_by = 'naive'; SELECT s, count(*) FROM keys GROUP BY s ORDER BY 2 DESC LIMIT 10",
		1.5)
}

// TestNaiveSlowerThanRadixDirection is lesson 3's comparison: on one
// thread, over the keys table, naive is slower than radix.
func TestNaiveSlowerThanRadixDirection(t *testing.T) {
	timing.Skip(t)
	d := lesson(t)
	ratioDirection(t, d.db, d.plan.Rows,
		"naive", "SET threads = 1; SET group_by = 'naive'; "+groupBy,
		"radix", "SET threads = 1; SET group_by = 'radix'; "+groupBy,
		1.1)
}

// TestParallelThreadsDirection is lesson 4's comparison: the parallel
// strategy on two threads beats lesson 3's single-threaded radix. It needs
// two CPUs.
func TestParallelThreadsDirection(t *testing.T) {
	timing.Skip(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	if load, ok := loadAverage(); ok && load > float64(runtime.NumCPU())-0.5 {
		t.Skipf("this machine is busy (load average %.1f on %d CPUs): a second thread only helps on an idle core", load, runtime.NumCPU())
	}
	d := lesson(t)
	ratioDirection(t, d.db, d.plan.Rows,
		"radix, 1 thread", "SET group_by = 'radix'; SET threads = 1; "+groupBy,
		"parallel, 2 threads", "SET group_by = 'parallel'; SET threads = 2; "+groupBy,
		1.1)
}

// TestBrowserSizedNaiveSlowerThanRadixDirection is lesson 3's comparison
// on the table the browser generates (an assumed L3, the browser's
// budget), run natively on one thread: the WebAssembly build runs the same
// engine code, single-threaded.
func TestBrowserSizedNaiveSlowerThanRadixDirection(t *testing.T) {
	timing.Skip(t)
	plan := New(AssumedL3, "assumed", BrowserBudget(512<<20))
	db, err := engine.Open(engine.Options{MaxThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Register(context.Background(), db, 1); err != nil {
		t.Fatal(err)
	}
	t.Log(plan)
	ratioDirection(t, db, plan.Rows,
		"naive", "SET threads = 1; SET group_by = 'naive'; "+groupBy,
		"radix", "SET threads = 1; SET group_by = 'radix'; "+groupBy,
		1.1)
}

// loadAverage is the one-minute load average (Linux /proc/loadavg).
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
