package perf_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/kernel/perf"
	"cachebook/kernel/sweep"
)

// TestQueryWithCounters runs real GROUP BY queries through the engine with
// a QueryMeter's hooks.
func TestQueryWithCounters(t *testing.T) {
	dir := t.TempDir()
	if err := sweep.WriteKeys(filepath.Join(dir, "t.parquet"), sweep.Keys(200_000, 5000, 1)); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(engine.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	avail := perf.Probe()
	for _, q := range []string{
		"SET group_by = 'naive'; SELECT k, count(*) FROM t GROUP BY k",
		"SET group_by = 'parallel'; SET threads = 2; SELECT k, count(*) FROM t GROUP BY k",
	} {
		t.Run(q, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m := perf.NewQueryMeter(perf.Options{Availability: &avail})
			res, err := db.NewSession().Exec(ctx, q, m.Hooks(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := res[len(res)-1].Rows; got != 5000 {
				t.Fatalf("%d groups, want 5000", got)
			}
			rep := m.Report()
			if len(rep.Workers) == 0 {
				t.Fatal("no worker rows: the engine did not call the hooks")
			}
			if !avail.Software.Available {
				t.Skipf("software counters unavailable: %s", avail.Summary())
			}
			tc, ok := rep.Total.Event(perf.EvTaskClock)
			if !ok || tc.Value <= 0 {
				t.Errorf("task-clock = %+v", tc)
			}
			if cy, _ := rep.Total.Event(perf.EvCycles); !avail.Hardware.Available && (cy.Available || cy.Reason == nil) {
				t.Errorf("cycles without a PMU: %+v", cy)
			}
			var b strings.Builder
			if err := rep.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			t.Logf("workers %d, phases %d\n%s", len(rep.Workers), len(rep.Phases), b.String())
		})
	}
}
