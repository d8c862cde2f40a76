package experiment

import (
	"bytes"
	"cachebook/engine"
	"cachebook/engine/gen"
	"cachebook/engine/vec"
	"cachebook/kernel/internal/timing"
	"cachebook/kernel/param"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"cachebook/kernel/internal/threadclock"
)

// TestBuildCycleIsOneCycle checks that the chase visits every line exactly
// once before coming back, and that the start points are spread along it.
func TestBuildCycleIsOneCycle(t *testing.T) {
	for _, lines := range []int{1, 2, 3, 1000, 4096} {
		buf := make([]uint32, lines*16)
		starts, err := buildCycle(context.Background(), buf, lines, 7, 8)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, lines)
		p := starts[0]
		for range lines {
			if p%16 != 0 || int(p/16) >= lines || seen[p/16] {
				t.Fatalf("%d lines: position %d is not a fresh line start", lines, p)
			}
			seen[p/16] = true
			p = buf[p]
		}
		if p != starts[0] {
			t.Fatalf("%d lines: the chain does not return to its start after %d steps", lines, lines)
		}
		if want := min(8, lines); len(starts) != want {
			t.Errorf("%d lines: %d starts, want %d", lines, len(starts), want)
		}
	}
}

// TestChaseLoopsAgree checks the two chase loops against a plain walk.
func TestChaseLoopsAgree(t *testing.T) {
	const lines = 777
	buf := make([]uint32, lines*16)
	starts, err := buildCycle(context.Background(), buf, lines, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	walk := func(p uint32, n int) uint32 {
		for range n {
			p = buf[p]
		}
		return p
	}
	for _, steps := range []int{0, 1, 3, 4, 5, 1001} {
		if got, want := chaseOne(buf, starts[1], steps), walk(starts[1], steps); got != want {
			t.Errorf("chaseOne %d steps = %d, want %d", steps, got, want)
		}
		ps := append([]uint32(nil), starts...)
		chaseChains(buf, ps, steps)
		for i, p := range ps {
			if want := walk(starts[i], steps); p != want {
				t.Errorf("chaseChains chain %d after %d steps at %d, want %d", i, steps, p, want)
			}
		}
	}
}

// TestReadPatternsTouchEveryLine checks that the strided and random reads
// read every line exactly once (each line's word 0 holds a different
// value, so a line missed or read twice changes the sum), and that the
// sequential read sums every word.
func TestReadPatternsTouchEveryLine(t *testing.T) {
	const lines = 1 << 10
	w := make([]uint32, lines*16)
	var want uint32
	for l := range lines {
		v := uint32(l)*2654435761 + 1
		w[l*16] = v
		want += v
	}
	if got := readRandom(w); got != want {
		t.Errorf("readRandom sum %d, want %d", got, want)
	}
	for _, stride := range []int{16, 32, 1024, lines * 16} {
		if got := readStrided(w, stride); got != want {
			t.Errorf("readStrided(%d words) sum %d, want %d", stride, got, want)
		}
	}
	// readRandom must be a permutation, not just sum right by luck.
	seen := make([]bool, lines)
	mask := uint64(lines - 1)
	shift := uint(5 + 1) // bits.Len64(1023)/2 + 1
	for i := range uint64(lines) {
		l := (i * 0x9e3779b97f4a7c15) & mask
		l ^= l >> shift
		l = (l * 0xbf58476d1ce4e5b9) & mask
		l ^= l >> shift
		if seen[l] {
			t.Fatalf("line %d read twice", l)
		}
		seen[l] = true
	}
	seq := make([]uint32, 64*3)
	var a, b uint64
	for i := range seq {
		seq[i] = rand.Uint32()
	}
	for i := 0; i < len(seq); i += 2 {
		q := uint64(seq[i]) | uint64(seq[i+1])<<32 // little-endian view
		if (i/2)%2 == 0 {
			a += q
		} else {
			b += q
		}
	}
	if got := readSequential(seq); got != uint32(a^b) {
		t.Errorf("readSequential = %d, want %d", got, uint32(a^b))
	}
}

func TestMemoryExperimentsRun(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		rows   int
	}{
		{"mlp", map[string]string{"size": "2MiB", "chains": "2,4", "sample": "2ms", "reps": "1"}, 3}, // 1 is added
		{"stride", map[string]string{"size": "2MiB", "sample": "2ms", "reps": "1", "patterns": "sequential,64,128,4096,random"}, 5},
		{"associativity", map[string]string{"strides": "4096,4160", "counts": "4,16", "sample": "2ms", "reps": "1"}, 2},
		{"c2c", map[string]string{"duration": "5ms", "reps": "1"}, 1},
		{"page-reuse", map[string]string{"size": "1MiB", "rounds": "2"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := runSpec(t, tt.name, tt.params, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, r)
			if n := len(r.Tables[0].Rows); n != tt.rows {
				t.Errorf("%d rows, want %d:\n%v", n, tt.rows, r.Tables[0].Rows)
			}
			checkChart(t, r, tt.name != "c2c") // c2c draws only pairs that ran side by side
		})
	}
}

// TestMLPDirection asserts the direction the lesson states, as a ratio in
// one run: eight independent chains through a buffer beyond the L2 cost
// well under the time per load of one chain. The margin is wide (2x where
// a core overlaps about 8), so a busy machine does not make it fail.
func TestMLPDirection(t *testing.T) {
	timing.Skip(t)
	timing.Eventually(t, func() string {
		r, err := runSpec(t, "mlp", map[string]string{"size": "32MiB", "chains": "1,8", "sample": "20ms", "reps": "3"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := r.Data.(*MLPData)
		one, eight := d.Rows[0], d.Rows[1]
		if one.Chains != 1 || eight.Chains != 8 {
			t.Fatalf("rows %+v", d.Rows)
		}
		if ratio := one.NSPerLoad / eight.NSPerLoad; ratio < 2 {
			return fmt.Sprintf("1 chain %.2f ns/load, 8 chains %.2f: only %.2fx, want at least 2x", one.NSPerLoad, eight.NSPerLoad, ratio)
		}
		return ""
	})
}

func TestMemoryExperimentParams(t *testing.T) {
	tests := []struct {
		exp    string
		params map[string]string
		want   string
	}{
		{"mlp", map[string]string{"chains": "0"}, "chains must list numbers between 1 and 64"},
		{"mlp", map[string]string{"chains": "1,65"}, "chains must list numbers between 1 and 64"},
		{"mlp", map[string]string{"size": "2GiB"}, "size must be between 1MiB and 1GiB"},
		{"mlp", map[string]string{"huge": "maybe"}, `huge must be true or false, got "maybe"`},
		{"stride", map[string]string{"patterns": "100"}, `"100" is not sequential, random or a stride`},
		{"stride", map[string]string{"patterns": " , "}, "patterns must list at least one"},
		{"associativity", map[string]string{"strides": "100"}, "strides must list multiples of 64"},
		{"associativity", map[string]string{"counts": "1"}, "counts must list numbers between 2 and 256"},
		{"associativity", map[string]string{"strides": "1MiB", "counts": "257"}, "counts must list numbers between 2 and 256"},
		{"associativity", map[string]string{"strides": "1MiB", "counts": "256,2"}, "the limit is 64MiB"},
		{"c2c", map[string]string{"pairs": "3-3"}, `"3-3" is not two different CPU numbers`},
		{"c2c", map[string]string{"pairs": "0-99999"}, `"0-99999" is not two different CPU numbers`},
		{"c2c", map[string]string{"duration": "1h"}, "duration must be between"},
		{"page-reuse", map[string]string{"variants": "madvise"}, `variants must be among keep, free, dontneed, remap, got "madvise"`},
		{"page-reuse", map[string]string{"rounds": "0"}, "rounds must be between 1 and 1000"},
		{"substring", map[string]string{"pattern": "a%b"}, "pattern must be 1 to 64 bytes"},
		{"substring", map[string]string{"pattern": ""}, "pattern must be 1 to 64 bytes"},
		{"substring", map[string]string{"data": t.TempDir()}, "unknown parameter data"},
	}
	for _, tt := range tests {
		t.Run(tt.exp+"/"+tt.want, func(t *testing.T) {
			res, err := runSpec(t, tt.exp, tt.params, nil)
			if err == nil {
				t.Fatalf("no error, result %+v", res)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestSubstringMethodsAgree checks every search loop against bytes.Contains
// on random strings over a small alphabet, where near-misses abound.
func TestSubstringMethodsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := vec.NewVector(vec.String, 0)
	var strs [][]byte
	for range 2000 {
		s := make([]byte, rng.IntN(40))
		for i := range s {
			s[i] = "goleab"[rng.IntN(6)]
		}
		strs = append(strs, s)
		v.Bytes = append(v.Bytes, s...)
		v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
		v.Len++
	}
	for _, needle := range []string{"g", "go", "goo", "google", "bab", "zz"} {
		want := 0
		for _, s := range strs {
			if bytes.Contains(s, []byte(needle)) {
				want++
			}
		}
		for _, m := range substringMethods {
			if got, _ := searchAll(context.Background(), v, []byte(needle), m); got != want {
				t.Errorf("%s %q: %d matches, want %d", m, needle, got, want)
			}
		}
	}
}

func TestSubstringOnHits(t *testing.T) {
	dir := t.TempDir()
	if err := gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"), gen.Options{Rows: 5000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(engine.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := Lookup("substring")
	r, err := Run(context.Background(), s, map[string]string{"reps": "1", "pattern": "o"}, Options{DB: db, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	d := r.Data.(*SubstringData)
	checkChart(t, r, true)
	if d.Rows != 5000 || d.Matches == 0 || len(d.Methods) != len(substringMethods) {
		t.Errorf("data %+v", d)
	}
}

// TestStrideAndSetsDirection asserts, as ratios within one run and with
// wide margins, the directions lesson 7 states: scrambled reads of a
// buffer beyond the caches cost more per line than an in-order stream, and
// 64 lines 4096 bytes apart (one L1 set on x86, 4 sets of 128 KiB 8-way
// L1s elsewhere: more lines than ways either way) cost more than the same
// lines 4160 bytes apart.
func TestStrideAndSetsDirection(t *testing.T) {
	timing.Skip(t)
	timing.Eventually(t, func() string {
		r, err := runSpec(t, "stride", map[string]string{"size": "64MiB", "patterns": "64,random", "sample": "20ms", "reps": "3"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows := r.Data.(*StrideData).Rows
		if ratio := rows[1].NSPerLine / rows[0].NSPerLine; ratio < 1.5 {
			return fmt.Sprintf("random %.2f ns/line, stride-64 %.2f: only %.2fx, want at least 1.5x", rows[1].NSPerLine, rows[0].NSPerLine, ratio)
		}
		return ""
	})
	timing.Eventually(t, func() string {
		r, err := runSpec(t, "associativity", map[string]string{"strides": "4096,4160", "counts": "64", "sample": "10ms", "reps": "3"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ns := r.Data.(*AssocData).NS[0]
		if ratio := ns[0] / ns[1]; ratio < 1.5 {
			return fmt.Sprintf("64 lines: %.2f ns/load at stride 4096, %.2f at 4160: only %.2fx, want at least 1.5x", ns[0], ns[1], ratio)
		}
		return ""
	})
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want string // fmt of the slice, or "error"
	}{
		{"0", "[0]"}, {"0-3", "[0 1 2 3]"}, {"0-1,4,6-7\n", "[0 1 4 6 7]"}, {"5-5", "[5]"},
		{"", "error"}, {"3-1", "error"}, {"a", "error"}, {"1,,2", "error"}, {"-1", "error"}, {"0-70000", "error"},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.in)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		}
		if s != tt.want {
			t.Errorf("parseCPUList(%q) = %s (%v), want %s", tt.in, s, err, tt.want)
		}
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8", "1", "2-1", "0-65535", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := parseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("parseCPUList(%q) = no CPUs and no error", s)
		}
		for _, c := range cpus {
			if c < 0 || c > 65535 {
				t.Fatalf("parseCPUList(%q) gave CPU %d", s, c)
			}
		}
	})
}

// TestPageReuseFaults checks the counts the lesson explains, which are
// exact rather than timed: pages dropped with MADV_DONTNEED or a fresh
// mapping fault once each on the next write; kept pages do not.
func TestPageReuseFaults(t *testing.T) {
	if ok, why := releaseSupported(); !ok {
		t.Skip(why)
	}
	r, err := runSpec(t, "page-reuse", map[string]string{"size": "4MiB", "rounds": "3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Data.(*PageReuseData)
	pages := float64(d.Bytes / 4096)
	if threadclock.Faults() == 0 && d.Rows[2].FaultsPerRound == 0 {
		t.Skip("this OS does not count page faults per thread")
	}
	for _, row := range d.Rows {
		switch row.Variant {
		case "keep", "free":
			if row.FaultsPerRound > pages/50 {
				t.Errorf("%s: %.0f faults per round for %.0f kept pages", row.Variant, row.FaultsPerRound, pages)
			}
		case "dontneed", "remap":
			if row.FaultsPerRound < pages || row.FaultsPerRound > pages*1.05 {
				t.Errorf("%s: %.0f faults per round, want one per page (%.0f)", row.Variant, row.FaultsPerRound, pages)
			}
		}
	}
}

// TestMemoryEstimatesRefuse checks that the per-cell memory cap refuses a
// run of each new experiment before it allocates, and lets a small one by.
func TestMemoryEstimatesRefuse(t *testing.T) {
	tests := []struct {
		exp   string
		big   map[string]string
		small map[string]string
	}{
		{"mlp", map[string]string{"size": "1GiB"}, map[string]string{"size": "1MiB", "chains": "1", "sample": "1ms", "reps": "1"}},
		{"stride", map[string]string{"size": "1GiB"}, map[string]string{"size": "1MiB", "patterns": "64", "sample": "1ms", "reps": "1"}},
		{"associativity", map[string]string{"strides": "1MiB", "counts": "64"}, map[string]string{"strides": "4096", "counts": "4", "sample": "1ms", "reps": "1"}},
		{"page-reuse", map[string]string{"size": "1GiB"}, map[string]string{"size": "1MiB", "rounds": "1"}},
		{"substring", map[string]string{"limit": "100000000"}, nil},
	}
	db, err := engine.Open(engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 64 << 20
	for _, tt := range tests {
		s, _ := Lookup(tt.exp)
		err := s.Check(tt.big, Options{MemoryLimit: limit, DB: db})
		var me *param.MemoryError
		if !errors.As(err, &me) {
			t.Errorf("%s %v under a 64 MiB cap: %v, want a memory error", tt.exp, tt.big, err)
		}
		if tt.small != nil {
			if _, err := Run(context.Background(), s, tt.small, Options{MemoryLimit: limit, DB: db}); err != nil {
				t.Errorf("%s %v under a 64 MiB cap: %v", tt.exp, tt.small, err)
			}
		}
	}
}

// checkChart verifies that an experiment's chart has points, each either
// on the numeric axis or labelled as a bar.
func checkChart(t *testing.T, r *Result, required bool) {
	t.Helper()
	c := r.Chart
	if c == nil {
		if required {
			t.Errorf("%s: no chart", r.Experiment)
		}
		return
	}
	if c.Title == "" || c.YTitle == "" || len(c.Series) == 0 {
		t.Errorf("%s: incomplete chart %+v", r.Experiment, c)
	}
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			t.Errorf("%s: series %q has no points", r.Experiment, s.Name)
		}
		for _, p := range s.Points {
			if c.Bars && p.Label == "" || !c.Bars && p.Label != "" {
				t.Errorf("%s: point %+v does not fit a chart with Bars=%v", r.Experiment, p, c.Bars)
			}
		}
	}
}

// TestBranchesDirection asserts the direction lesson 2's counter-example
// states: the same filter over the same L1-resident values costs more per
// element shuffled than sorted (branch mispredictions, not memory), or
// the experiment says it was too noisy to tell; never the opposite.
func TestBranchesDirection(t *testing.T) {
	timing.Skip(t)
	timing.Eventually(t, func() string {
		r, err := runSpec(t, "branches", map[string]string{"reps": "3", "sample": "5ms"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := r.Data.(*BranchesData)
		if d.ModelledL1MissesPerElement > 0.01 {
			t.Errorf("the model counts %.4f L1 misses per element of an L1-resident array", d.ModelledL1MissesPerElement)
		}
		if d.Noisy {
			return ""
		}
		if d.Slowdown < 1.5 {
			return fmt.Sprintf("shuffled %.2fx sorted (%.2f–%.2f), want at least 1.5x", d.Slowdown, d.Low, d.High)
		}
		return ""
	})
}
