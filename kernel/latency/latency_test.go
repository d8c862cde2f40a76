package latency

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unsafe"

	"cachebook/kernel/param"
)

func TestSizes(t *testing.T) {
	s := Sizes(4<<10, 1<<30, 4)
	if s[0] != 4<<10 || s[len(s)-1] != 1<<30 {
		t.Fatalf("ends %d..%d", s[0], s[len(s)-1])
	}
	if len(s) != 18*4+1 {
		t.Errorf("%d sizes, want 73", len(s))
	}
	for i, b := range s {
		if b%NodeBytes != 0 {
			t.Errorf("size %d not a multiple of %d", b, NodeBytes)
		}
		if i > 0 && b <= s[i-1] {
			t.Errorf("not ascending at %d", i)
		}
	}
	if got := Sizes(100, 50, 4); len(got) != 1 || got[0] != 128 {
		t.Errorf("degenerate = %v", got)
	}
	if got := Sizes(4096, 8192, 1); len(got) != 2 {
		t.Errorf("one per octave = %v", got)
	}
}

func TestBuildCycleIsOneCycle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nodes := range []int{2, 3, 7, 64, 1000} {
		words := make([]uint32, nodes*wordsPerNode)
		BuildCycle(words, nodes, rng)
		seen := make([]bool, nodes)
		p := uint32(0)
		for i := 0; i < nodes; i++ {
			if p%wordsPerNode != 0 {
				t.Fatalf("index %d not node-aligned", p)
			}
			n := p / wordsPerNode
			if seen[n] {
				t.Fatalf("nodes=%d: revisited node %d after %d steps", nodes, n, i)
			}
			seen[n] = true
			p = words[p]
		}
		if p != 0 {
			t.Fatalf("nodes=%d: did not return to start after one lap", nodes)
		}
	}
}

// curve builds a synthetic latency curve: ppo points per octave from 4 KiB,
// latency from f, optionally with multiplicative noise.
func curve(maxBytes int64, ppo int, f func(b float64) float64, noise float64, seed uint64) []Point {
	rng := rand.New(rand.NewPCG(seed, seed))
	var pts []Point
	for _, b := range Sizes(4<<10, maxBytes, ppo) {
		ns := f(float64(b)) * (1 + noise*(rng.Float64()*2-1))
		pts = append(pts, Point{Bytes: b, Ns: ns})
	}
	return pts
}

func steps(b float64) float64 {
	switch {
	case b <= 48<<10:
		return 1.2
	case b <= 1<<20:
		return 4.3
	case b <= 16<<20:
		return 14
	default:
		return 120 + 20*math.Log2(b/(16<<20)) // DRAM keeps rising (page walks)
	}
}

// vmLike follows the measured test-VM curve: a gradual L2→L3 transition and
// a small effective L3.
func vmLike(b float64) float64 {
	pts := [][2]float64{{16 << 10, 1.22}, {48 << 10, 1.23}, {64 << 10, 4.3}, {256 << 10, 4.1}, {512 << 10, 4.6},
		{1 << 20, 8.2}, {2 << 20, 14.7}, {4 << 20, 17}, {8 << 20, 140}, {16 << 20, 170}, {32 << 20, 196}, {64 << 20, 225},
		{128 << 20, 265}, {256 << 20, 316}, {1 << 30, 360}}
	if b <= pts[0][0] {
		return pts[0][1]
	}
	for i := 1; i < len(pts); i++ {
		if b <= pts[i][0] {
			x0, x1 := math.Log2(pts[i-1][0]), math.Log2(pts[i][0])
			y0, y1 := math.Log2(pts[i-1][1]), math.Log2(pts[i][1])
			return math.Exp2(y0 + (y1-y0)*(math.Log2(b)-x0)/(x1-x0))
		}
	}
	return pts[len(pts)-1][1]
}

// tlbStep is the shape measured on the test VM on a quiet moment: L2 at
// 4.9 ns to 256 KiB, 6.3 ns to 600 KiB (L1 DTLB reach exceeded), L3 at 18 ns.
func tlbStep(b float64) float64 {
	switch {
	case b <= 48<<10:
		return 1.7
	case b <= 256<<10:
		return 4.9
	case b <= 600<<10:
		return 6.3
	case b <= 1536<<10: // a ramp to L3, as measured (8.9, 11.1, 12.0, 16.6 ns)
		f := math.Log2(b/(600<<10)) / math.Log2(1536.0/600)
		return 6.3 * math.Pow(18/6.3, f)
	case b <= 3<<20:
		return 18
	default:
		return 230
	}
}

// slopedL3 is the quiet-VM curve: L2 4.5 ns to 600 KiB, a ramp to L3,
// whose latency then rises from 13 to 22 ns between 1.4 and 4.8 MiB
// (0.43 log2-units per octave: sloped, not flat), then DRAM.
func slopedL3(b float64) float64 {
	ramp := func(b, b0, b1, y0, y1 float64) float64 {
		f := math.Log2(b/b0) / math.Log2(b1/b0)
		return y0 * math.Pow(y1/y0, f)
	}
	switch {
	case b <= 48<<10:
		return 1.5
	case b <= 600<<10:
		return 4.6
	case b <= 1400<<10:
		return ramp(b, 600<<10, 1400<<10, 4.6, 13)
	case b <= 4900<<10:
		return ramp(b, 1400<<10, 4900<<10, 13, 22)
	default:
		return ramp(b, 4900<<10, 1<<30, 135, 400)
	}
}

func TestDetectLevels(t *testing.T) {
	type want struct {
		name           string
		ns             float64 // within 15 %
		sizeLo, sizeHi int64   // SizeBytes range (0,0: unchecked)
	}
	tests := []struct {
		name string
		pts  []Point
		want []want
	}{
		{"clean steps", curve(1<<30, 4, steps, 0, 1), []want{
			{"L1", 1.2, 40 << 10, 56 << 10}, {"L2", 4.3, 800 << 10, 1200 << 10}, {"L3", 14, 13 << 20, 19 << 20}, {"memory", 160, 0, 0}}},
		{"noisy steps, 8 per octave", curve(1<<30, 8, steps, 0.05, 2), []want{
			{"L1", 1.2, 40 << 10, 56 << 10}, {"L2", 4.3, 800 << 10, 1200 << 10}, {"L3", 14, 13 << 20, 19 << 20}, {"memory", 160, 0, 0}}},
		{"test VM shape", curve(1<<30, 4, vmLike, 0.03, 3), []want{
			{"L1", 1.22, 40 << 10, 58 << 10}, {"L2", 4.3, 256 << 10, 1 << 20}, {"L3", 16, 2 << 20, 6 << 20}, {"memory", 250, 0, 0}}},
		{"L2 with a TLB-miss step is one level", curve(256<<20, 4, tlbStep, 0.02, 7), []want{
			{"L1", 1.7, 40 << 10, 58 << 10}, {"L2", 5.2, 400 << 10, 1 << 20}, {"L3", 18, 2 << 20, 4 << 20}, {"memory", 230, 0, 0}}},
		{"sloped L3 (quiet test VM)", curve(1<<30, 4, slopedL3, 0.02, 8), []want{
			{"L1", 1.5, 40 << 10, 58 << 10}, {"L2", 4.6, 512 << 10, 1 << 20}, {"L3", 16, 4 << 20, 6 << 20}, {"memory", 250, 0, 0}}},
		{"only L1", curve(32<<10, 4, steps, 0, 4), []want{{"L1", 1.2, 0, 0}}},
		{"L1 and L2, no memory", curve(512<<10, 4, steps, 0, 5), []want{{"L1", 1.2, 40 << 10, 56 << 10}, {"L2", 4.3, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DetectLevels(tt.pts)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d levels %+v, want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Name != w.name {
					t.Errorf("level %d name %s, want %s", i, g.Name, w.name)
				}
				if math.Abs(g.Ns-w.ns)/w.ns > 0.15 && w.name != "memory" {
					t.Errorf("%s ns %.2f, want ≈%.2f", g.Name, g.Ns, w.ns)
				}
				if w.name == "memory" && g.Ns < MemoryNs {
					t.Errorf("memory at %.1f ns", g.Ns)
				}
				if w.sizeHi > 0 && (g.SizeBytes < w.sizeLo || g.SizeBytes > w.sizeHi) {
					t.Errorf("%s size %s, want %s..%s", g.Name, FormatSize(g.SizeBytes), FormatSize(w.sizeLo), FormatSize(w.sizeHi))
				}
			}
		})
	}
	if DetectLevels(nil) != nil {
		t.Error("levels of nothing")
	}
	if l := DetectLevels([]Point{{Bytes: 4096, Ns: 1}}); len(l) != 1 {
		t.Errorf("one point: %+v", l)
	}
	// A single outlier inside a plateau must not split it.
	pts := curve(256<<10, 8, func(b float64) float64 { return 1.2 }, 0, 6)
	pts[5].Ns = 40
	if l := DetectLevels(pts); len(l) != 1 {
		t.Errorf("outlier split the plateau: %+v", l)
	}
}

func TestFormatSize(t *testing.T) {
	if FormatSize(48<<10) != "48 KiB" || FormatSize(1536<<10) != "1.5 MiB" || FormatSize(100) != "100 B" {
		t.Errorf("FormatSize: %s %s %s", FormatSize(48<<10), FormatSize(1536<<10), FormatSize(100))
	}
}

func TestReadSysfsCaches(t *testing.T) {
	fsys := fstest.MapFS{
		"index0/level": {Data: []byte("1\n")}, "index0/type": {Data: []byte("Data\n")}, "index0/size": {Data: []byte("48K\n")},
		"index0/shared_cpu_list": {Data: []byte("0-1\n")},
		"index1/level":           {Data: []byte("1\n")}, "index1/type": {Data: []byte("Instruction\n")}, "index1/size": {Data: []byte("32K\n")},
		"index2/level": {Data: []byte("2\n")}, "index2/type": {Data: []byte("Unified\n")}, "index2/size": {Data: []byte("1024K\n")},
		"index3/level": {Data: []byte("3\n")}, "index3/type": {Data: []byte("Unified\n")}, "index3/size": {Data: []byte("32768K\n")},
		"index4/level": {Data: []byte("x\n")},
		"uevent":       {Data: []byte("")},
	}
	c, err := ReadSysfsCaches(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 4 || c[0].Type != "Data" || c[0].SizeBytes != 48<<10 || c[0].SharedCPUs != "0-1" || c[3].SizeBytes != 32<<20 {
		t.Errorf("caches = %+v", c)
	}
	if _, err := ReadSysfsCaches(fstest.MapFS{"x/y": {}}); err != nil {
		t.Errorf("dir without index entries: %v", err)
	}
	if got := cpuidCaches(49152, 1<<20, -1); len(got) != 2 || got[1].SizeBytes != 1<<20 {
		t.Errorf("cpuid caches = %+v", got)
	}
}

func TestRunSmall(t *testing.T) {
	var calls int
	res, err := Run(context.Background(), Config{
		MinBytes: 4 << 10, MaxBytes: 64 << 10, PointsPerOctave: 1, Reps: 3, SampleTime: 2 * time.Millisecond, HugePages: true,
		Progress: func(p Point, done, total int) {
			calls++
			if done != calls || total != 5 {
				t.Errorf("progress %d/%d at call %d", done, total, calls)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 5 || calls != 5 {
		t.Fatalf("%d points, %d progress calls", len(res.Points), calls)
	}
	for _, p := range res.Points {
		if !(p.Ns > 0.05 && p.Ns < 1000) || p.MinNs > p.Ns || p.MaxNs < p.Ns || p.Accesses <= 0 {
			t.Errorf("implausible point %+v", p)
		}
	}
	if len(res.Levels) == 0 || res.Pages.Requested != "2MiB-THP" || res.CyclesNote == "" {
		t.Errorf("result %+v", res)
	}
	t.Logf("points %+v pages %+v caches %s %+v", res.Points, res.Pages, res.CacheSource, res.Caches)
}

func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	res, err := Run(ctx, Config{MinBytes: 4 << 10, MaxBytes: 1 << 20, PointsPerOctave: 1, Reps: 1, SampleTime: time.Millisecond,
		Progress: func(p Point, done, total int) {
			if done == 2 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if len(res.Points) != 2 {
		t.Errorf("%d points after cancel at 2", len(res.Points))
	}
}

// TestLinkNodesFollowsTheCycle: the pointer chain linkNodes makes visits
// every node once per lap, in the order of BuildCycle's indices.
func TestLinkNodesFollowsTheCycle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, nodes := range []int{2, 5, 64, 1000} {
		words := make([]uint32, nodes*wordsPerNode)
		BuildCycle(words, nodes, rng)
		order := make([]uint32, 0, nodes)
		for p, i := uint32(0), 0; i < nodes; i++ {
			order = append(order, p/wordsPerNode)
			p = words[p]
		}
		first := linkNodes(words, nodes)
		base := uintptr(unsafe.Pointer(first))
		p := first
		for i, want := range order {
			if got := (uintptr(unsafe.Pointer(p)) - base) / NodeBytes; got != uintptr(want) {
				t.Fatalf("nodes=%d: step %d at node %d, want %d", nodes, i, got, want)
			}
			p = p.next
		}
		if p != first {
			t.Fatalf("nodes=%d: did not return to the first node after one lap", nodes)
		}
		if q := chase(first, 8*nodes); q != first {
			t.Fatalf("nodes=%d: chase of 8 laps ended away from the start", nodes)
		}
	}
}

func TestLastLevel(t *testing.T) {
	tests := []struct {
		name   string
		levels []Level
		want   int64
		ok     bool
	}{
		{"L1 L2 memory", []Level{{Name: "L1", SizeBytes: 48 << 10}, {Name: "L2", SizeBytes: 2 << 20}, {Name: "memory"}}, 2 << 20, true},
		{"three caches", []Level{{Name: "L1", SizeBytes: 32 << 10}, {Name: "L2", SizeBytes: 1 << 20}, {Name: "L3", SizeBytes: 24 << 20}, {Name: "memory"}}, 24 << 20, true},
		{"no memory plateau", []Level{{Name: "L1", SizeBytes: 32 << 10}, {Name: "L2"}}, 0, false},
		{"memory only", []Level{{Name: "memory"}}, 0, false},
		{"none", nil, 0, false},
	}
	for _, tt := range tests {
		got, err := LastLevel(tt.levels)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%s: LastLevel = %d, %v; want %d, ok %v", tt.name, got, err, tt.want, tt.ok)
		}
	}
}

func TestHalfLatency(t *testing.T) {
	pts := func(ns ...float64) []Point {
		var out []Point
		for i, v := range ns {
			out = append(out, Point{Bytes: int64(1<<20) << i, Ns: v})
		}
		return out
	}
	tests := []struct {
		name   string
		points []Point
		want   int64
	}{
		{"slow fade into memory", pts(5, 30, 35, 40, 46, 60, 95), 16 << 20},
		{"still in cache", pts(5, 6, 7, 30), 0},
		{"memory at once", pts(100, 120, 130), 0},
		{"one point", pts(100), 0},
	}
	for _, tt := range tests {
		got, err := halfLatency(tt.points)
		if got != tt.want || (err == nil) != (tt.want > 0) {
			t.Errorf("%s: halfLatency = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
}

func TestConfigFromDisk(t *testing.T) {
	tests := []struct {
		args    map[string]string
		want    int64
		wantErr string
	}{
		{map[string]string{"max": "64M"}, 0, ""},
		{map[string]string{"max": "64M", "disk": "true"}, 128 << 20, ""},
		{map[string]string{"max": "4K", "disk": "true"}, 64 << 20, ""},
		{map[string]string{"max": "64M", "disk": "true", "disk_size": "1G"}, 1 << 30, ""},
		{map[string]string{"max": "64M", "disk": "true", "disk_size": "32M"}, 0, "must be larger than max"},
		{map[string]string{"max": "64M", "disk_size": "1G"}, 0, "without disk=true"},
	}
	for _, tt := range tests {
		v, err := param.Parse(Params(), tt.args)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ConfigFrom(v, 0)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || cfg.DiskBytes != tt.want {
			t.Errorf("%v: DiskBytes %d, err %v; want %d", tt.args, cfg.DiskBytes, err, tt.want)
		}
	}
}
