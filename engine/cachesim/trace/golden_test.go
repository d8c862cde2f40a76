package trace

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden.txt from this code")

// TestGolden pins every modelled count (totals and phases) of the count
// and generic paths, naive, radix and parallel, unsampled, set-sampled
// and time-sampled, to testdata/golden.txt, written by the code before
// the traced pass was batched and the simulation moved to its own
// goroutine (commit def6857): speed work on the trace and the model must
// leave the results bit for bit as they were. Rewrite it with
// -update-golden only for a change meant to change the model's results.
func TestGolden(t *testing.T) {
	if raceEnabled {
		t.Skip("slow under the race detector")
	}
	var out bytes.Buffer
	keys := userKeys(1<<18, 3)
	for _, geo := range []cachesim.Geometry{cachesim.EPYC9124(), cachesim.DefaultGeometry()} {
		for _, o := range []Options{
			{Strategy: agg.Naive},
			{Strategy: agg.Radix, Threads: 1, RadixBits: 12},
			{Strategy: agg.Radix, Threads: 3, RadixBits: 6},
			{Strategy: agg.Radix, Threads: 1, RadixBits: 8, HugePages: true, NoRowsHint: true},
		} {
			for _, s := range []cachesim.Sampling{{}, AutoSampling(geo, 1.0/16), withEvery(AutoSampling(geo, 1.0/16), 8), withEvery(cachesim.Sampling{}, 4)} {
				o.Geometry, o.Sampling = geo, s
				r, err := Count(context.Background(), keys, o)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "%+v\n", *r)
				r, err = Generic(context.Background(), keys, []agg.Spec{{Kind: agg.CountStar}, {Kind: agg.Sum, In: vecInt64}}, o)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "%+v\n", *r)
			}
		}
	}
	const path = "testdata/golden.txt"
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.Split(out.Bytes(), []byte("\n"))
	for i, w := range bytes.Split(want, []byte("\n")) {
		if i >= len(got) || !bytes.Equal(got[i], w) {
			t.Fatalf("result %d differs from %s:\n got %s\nwant %s", i+1, path, got[min(i, len(got)-1)], w)
		}
	}
	if len(got) != len(bytes.Split(want, []byte("\n"))) {
		t.Fatalf("%d results, %s has %d", len(got), path, len(bytes.Split(want, []byte("\n"))))
	}
}
