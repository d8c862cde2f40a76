package trace

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/cachesim/internal/testkeys"
)

type cgJob struct {
	strategy           agg.Strategy
	rows, groups, bits int
	generic            bool // the generic path (Config.Generic) instead of the tuned count path
}

func (j cgJob) String() string {
	if j.generic && j.strategy == agg.Naive {
		return fmt.Sprintf("naive generic, %d rows, %d groups", j.rows, j.groups)
	}
	if j.generic {
		return fmt.Sprintf("radix generic %d partitions, %d rows, %d groups", 1<<j.bits, j.rows, j.groups)
	}
	if j.strategy == agg.Naive {
		return fmt.Sprintf("naive, %d rows, %d groups", j.rows, j.groups)
	}
	return fmt.Sprintf("radix %d partitions, %d rows, %d groups", 1<<j.bits, j.rows, j.groups)
}

var cgMiss = regexp.MustCompile(`(D1|LLd) +misses: +([\d,]+)`)

// valgrindGODEBUG keeps the Go runtime off RDTSCP, which valgrind 3.19
// cannot execute: the runtime reads the clock with it when a lock is
// contended, and the helper died with SIGILL under load.
func valgrindGODEBUG() string {
	if d := os.Getenv("GODEBUG"); d != "" {
		return "GODEBUG=" + d + ",cpu.rdtscp=off"
	}
	return "GODEBUG=cpu.rdtscp=off"
}

func cachegrindRun(t *testing.T, helper string, opts []string, job cgJob, phase int) (d1, ll int64) {
	t.Helper()
	args := append([]string{"--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null"}, opts...)
	args = append(args, helper, fmt.Sprint(int(job.strategy)), fmt.Sprint(job.rows), fmt.Sprint(job.groups), fmt.Sprint(job.bits), fmt.Sprint(phase), fmt.Sprint(job.generic))
	cmd := exec.Command("valgrind", args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", valgrindGODEBUG())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("valgrind: %v\n%s", err, out)
	}
	got := map[string]int64{}
	for _, m := range cgMiss.FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
		got[m[1]] = n
	}
	if len(got) != 2 {
		t.Fatalf("no miss counts in cachegrind's output:\n%s", out)
	}
	return got["D1"], got["LLd"]
}

// TestCachegrindGroupBy compares the modelled misses of the engine's naive
// and radix GROUP BY (tuned count path, 1M rows, and the generic naive
// path) with cachegrind's count for the real engine running the same query
// (internal/cghelper, built without the race detector), minus a run that
// only generates the keys. Same geometry: D1 32 KiB 8-way, LL
// 8 MiB 16-way, no L2. Agreement within 25%; the differences are the Go
// runtime (allocation, the goroutine stack, the source closure) and the
// different placement of buffers in memory.
func TestCachegrindGroupBy(t *testing.T) {
	if testing.Short() {
		t.Skip("cachegrind comparison skipped in -short mode")
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind not installed")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not in PATH: cannot build the helper")
	}
	helper := filepath.Join(t.TempDir(), "cghelper")
	if out, err := exec.Command("go", "build", "-o", helper, "cachebook/engine/cachesim/internal/cghelper").CombinedOutput(); err != nil {
		t.Fatalf("go build cghelper: %v\n%s", err, out)
	}
	g := cachesim.Geometry{LineSize: 64, L1: cachesim.Level{Size: 32 << 10, Ways: 8}, L3: cachesim.Level{Size: 8 << 20, Ways: 16}}
	opts := []string{"--D1=32768,8,64", "--LL=8388608,16,64"}
	t.Logf("%-44s %10s %10s %7s %10s %10s %7s", "query (D1 32K 8-way, LL 8M 16-way)", "D1 model", "D1 cg", "diff", "LL model", "LL cg", "diff")
	jobs := []cgJob{
		{agg.Naive, 1 << 20, 1 << 18, 0, false},
		{agg.Radix, 1 << 20, 1 << 18, 12, false},
		{agg.Naive, 1 << 20, 1 << 18, 0, true},
		{agg.Radix, 1 << 20, 1 << 18, 12, true},
		{agg.Naive, 1 << 20, 1 << 14, 0, false},
		{agg.Radix, 1 << 20, 1 << 14, 8, false},
	}
	if raceEnabled {
		jobs = jobs[:4] // the model runs instrumented: keep it short
	}
	// Phase 0 generates the keys and sweeps the caches, and stops before
	// anything that depends on the strategy, the bits or the path: jobs
	// with the same rows and groups share its counts, one valgrind run.
	type keyset struct{ rows, groups int }
	base := map[keyset][2]int64{}
	for _, job := range jobs {
		keys := testkeys.Keys(job.rows, job.groups, 1)
		o := Options{Geometry: g, Strategy: job.strategy, Threads: 1, RadixBits: job.bits, MorselRows: job.rows}
		var res *Result
		var err error
		if job.generic {
			res, err = Generic(context.Background(), keys, []agg.Spec{{Kind: agg.CountStar}}, o)
		} else {
			res, err = Count(context.Background(), keys, o)
		}
		if err != nil {
			t.Fatal(err)
		}
		ks := keyset{job.rows, job.groups}
		b, ok := base[ks]
		if !ok {
			b[0], b[1] = cachegrindRun(t, helper, opts, job, 0)
			base[ks] = b
		}
		d0, l0 := b[0], b[1]
		d1, l1 := cachegrindRun(t, helper, opts, job, 1)
		cd, cl := d1-d0, l1-l0
		rd := float64(res.Total.L1.Misses-cd) / float64(cd)
		rl := float64(res.Total.DRAMReads-cl) / float64(cl)
		t.Logf("%-44s %10d %10d %6.1f%% %10d %10d %6.1f%%", job, res.Total.L1.Misses, cd, 100*rd, res.Total.DRAMReads, cl, 100*rl)
		if math.Abs(rd) > 0.25 || math.Abs(rl) > 0.25 {
			t.Errorf("%s: model and cachegrind differ by more than 25%%", job)
		}
	}
}
