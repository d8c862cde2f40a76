package cachesim

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// CachegrindGeometry is the two-level geometry the comparisons give both
// the model and cachegrind: D1 32 KiB 8-way, LL 8 MiB 16-way, 64 B lines
// (cachegrind models no L2 and no TLB).
func cachegrindGeometry() (Geometry, []string) {
	g := Geometry{LineSize: 64, L1: Level{Size: 32 << 10, Ways: 8}, L3: Level{Size: 8 << 20, Ways: 16}}
	return g, []string{"--D1=32768,8,64", "--LL=8388608,16,64"}
}

var cgLine = regexp.MustCompile(`(D1|LLd) +misses: +([\d,]+)`)

// cachegrind runs argv under cachegrind with the given cache options and
// returns its D1 and LLd (data, last level) miss counts.
func cachegrind(t testing.TB, opts []string, argv ...string) (d1, ll int64) {
	t.Helper()
	args := append([]string{"--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null"}, opts...)
	out, err := exec.Command("valgrind", append(args, argv...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("valgrind %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	got := map[string]int64{}
	for _, m := range cgLine.FindAllStringSubmatch(string(out), -1) {
		n, err := strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got[m[1]] = n
	}
	if len(got) != 2 {
		t.Fatalf("no miss counts in cachegrind's output:\n%s", out)
	}
	return got["D1"], got["LLd"]
}

// needTools skips the test unless valgrind (and the given tools) are
// installed; .ci/run installs them.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("cachegrind comparison skipped in -short mode")
	}
	for _, tool := range append([]string{"valgrind"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// TestCachegrindPatterns compares the model's L1 and last-level miss
// counts for the named patterns with cachegrind's for a C program making
// the same accesses (testdata/patterns.c), same geometry, within 10%.
func TestCachegrindPatterns(t *testing.T) {
	needTools(t, "gcc")
	bin := filepath.Join(t.TempDir(), "patterns")
	if out, err := exec.Command("gcc", "-O2", "-fno-tree-vectorize", "-o", bin, "testdata/patterns.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	g, opts := cachegrindGeometry()
	cases := []Pattern{
		{Name: "sequential", Size: 16 << 20, Passes: 2},
		{Name: "sequential", Size: 4 << 20, Passes: 3},
		{Name: "strided", Size: 64 << 20, Stride: 4096, Passes: 1},
		{Name: "strided", Size: 4 << 20, Stride: 128, Passes: 2},
		{Name: "random", Size: 64 << 20, N: 1 << 20},
		{Name: "random", Size: 4 << 20, N: 1 << 20},
		{Name: "chase", Size: 16 << 20, N: 1 << 20},
		{Name: "chase", Size: 4 << 20, N: 1 << 20},
		{Name: "transpose", Dim: 1024},
		{Name: "transpose-blocked", Dim: 1024, Block: 8},
		{Name: "hashprobe", Size: 64 << 20, N: 1 << 20},
		{Name: "hashprobe", Size: 256 << 10, N: 1 << 20},
	}
	t.Logf("%-48s %12s %12s %7s %12s %12s %7s", "pattern (D1 32K 8-way, LL 8M 16-way)", "D1 model", "D1 cg", "diff", "LL model", "LL cg", "diff")
	for _, p := range cases {
		sim := mustSim(t, g, Sampling{})
		st := run(t, sim, p)
		argv := func(phase int) []string {
			return []string{bin, p.Name, fmt.Sprint(p.Size), fmt.Sprint(p.Stride), fmt.Sprint(p.N), fmt.Sprint(p.Passes), fmt.Sprint(p.Dim), fmt.Sprint(p.Block), fmt.Sprint(phase)}
		}
		d0, l0 := cachegrind(t, opts, argv(0)...)
		d1, l1 := cachegrind(t, opts, argv(1)...)
		cd, cl := d1-d0, l1-l0
		rd, rl := relDiff(st.L1.Misses, cd), relDiff(st.DRAMReads, cl)
		t.Logf("%-48s %12d %12d %6.2f%% %12d %12d %6.2f%%", p, st.L1.Misses, cd, 100*rd, st.DRAMReads, cl, 100*rl)
		if math.Abs(rd) > 0.10 || math.Abs(rl) > 0.10 {
			t.Errorf("%s: model and cachegrind differ by more than 10%%", p)
		}
	}
}

// relDiff returns (model - ref) / ref; a difference of a few misses from
// nothing counts as none.
func relDiff(model, ref int64) float64 {
	if ref < 1000 && math.Abs(float64(model-ref)) < 1000 {
		return 0
	}
	return float64(model-ref) / float64(max(ref, 1))
}
