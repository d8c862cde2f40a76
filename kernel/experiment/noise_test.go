package experiment

import (
	"context"
	"runtime"
	"testing"

	"cachebook/kernel/bandwidth"
	"cachebook/kernel/internal/timing"
	"cachebook/kernel/sweep"
)

// noiseVerdict is what one key comparison concluded.
type noiseVerdict struct {
	text  string
	noisy bool
	// opposite is set when the verdict, not noisy, states the opposite
	// of the lesson's direction.
	opposite bool
}

// noiseComparisons are the lessons' key comparisons with small
// parameters, each returning its verdict.
var noiseComparisons = []struct {
	name string
	run  func(t *testing.T, ctx context.Context) noiseVerdict
}{
	{"false-sharing (lesson 5)", experimentVerdict("false-sharing", map[string]string{
		"threads": "2", "duration": "20ms", "reps": "5", "modes": "atomic"})},
	{"parallel-merge (lesson 4)", experimentVerdict("parallel-merge", map[string]string{
		"threads": "2", "rows": "400000", "groups": "100000", "reps": "3"})},
	{"zeroing (lesson 6)", experimentVerdict("zeroing", map[string]string{
		"threads": "1", "size": "4MiB", "allocs": "8", "variants": "make,pool", "reps": "5"})},
	{"stride (lesson 7)", experimentVerdict("stride", map[string]string{
		"size": "32MiB", "patterns": "sequential,random", "sample": "10ms", "reps": "5"})},
	{"mlp (lesson 7)", experimentVerdict("mlp", map[string]string{
		"size": "32MiB", "chains": "1,8", "sample": "10ms", "reps": "5"})},
	{"bandwidth (lesson 6)", func(t *testing.T, ctx context.Context) noiseVerdict {
		rep, err := bandwidth.Run(ctx, bandwidth.Config{Bytes: 32 << 20, Threads: []int{1, 2}, Ops: []bandwidth.Op{bandwidth.Read}, Reps: 5})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Results[len(rep.Results)-1]
		return noiseVerdict{text: r.Verdict, noisy: r.Noisy, opposite: !r.Noisy && r.VsOne < 1}
	}},
	{"sweep (lesson 3)", func(t *testing.T, ctx context.Context) noiseVerdict {
		rep, err := sweep.Run(ctx, sweep.Config{Rows: 2e6, Groups: []int64{2e6}, Reps: 3})
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Points[len(rep.Points)-1]
		return noiseVerdict{text: p.Verdict, noisy: p.Noisy, opposite: !p.Noisy && p.NaiveOverRadix < 1}
	}},
}

// experimentVerdict runs an experiment and reads its Verdict.
func experimentVerdict(name string, params map[string]string) func(t *testing.T, ctx context.Context) noiseVerdict {
	return func(t *testing.T, ctx context.Context) noiseVerdict {
		r, err := runSpec(t, name, params, nil)
		if err != nil {
			t.Fatal(err)
		}
		var v Verdict
		switch d := r.Data.(type) {
		case *FalseSharingData:
			v = d.Verdict
		case *ParallelMergeData:
			v = d.Verdict
		case *ZeroingData:
			v = d.Verdict
		case *StrideData:
			v = d.Verdict
		case *MLPData:
			v = d.Verdict
		default:
			t.Fatalf("%s: no verdict in %T", name, r.Data)
		}
		// The lesson's direction is a ratio above 1 (side A costs more).
		return noiseVerdict{text: v.Text, noisy: v.Noisy, opposite: !v.Noisy && v.Ratio < 1}
	}
}

// TestNoiseDirection runs each lesson's key comparison twice: on the
// machine as it is, then while the test keeps every core busy (a spinning
// goroutine per GOMAXPROCS) and the memory channels too (goroutines
// streaming over a 64 MiB buffer each). Every verdict must be the lesson's
// direction or "too noisy to tell here", never the opposite.
//
// It cannot be flaky the way a timing assertion is: a busy machine is
// allowed to make a comparison noisy, and each comparison is noisy as soon
// as one of its alternating rounds falls on the other side of 1 or its
// threads did not run together. It fails only if every round of a
// comparison went the wrong way while its threads did run together, which
// is what it exists to catch: a verdict stating the opposite.
func TestNoiseDirection(t *testing.T) {
	timing.Skip(t)
	for _, phase := range []string{"quiet", "with hogs"} {
		stop := func() {}
		if phase == "with hogs" {
			stop = timing.StartHogs(runtime.GOMAXPROCS(0), max(1, runtime.GOMAXPROCS(0)/2), 64<<20)
		}
		for _, c := range noiseComparisons {
			v := c.run(t, context.Background())
			t.Logf("%-9s %-26s noisy=%-5v %s", phase, c.name, v.noisy, v.text)
			switch {
			case v.text == "":
				t.Errorf("%s, %s: no verdict", phase, c.name)
			case v.opposite:
				t.Errorf("%s, %s: the verdict states the opposite of the lesson's direction without being noisy: %s", phase, c.name, v.text)
			}
		}
		stop()
	}
}
