// Package latency measures the memory latency hierarchy by pointer
// chasing: one random cycle (Sattolo's algorithm) through cache-line-sized
// nodes, so every load depends on the previous one and no prefetcher can
// guess the next address. Sweeping the working set from a few KiB to a GiB
// shows one plateau per cache level and then DRAM; DetectLevels finds them
// and OSCaches reports what the operating system says the caches are.
//
// The chain is built as uint32 word indices and then turned into raw
// pointers, so that each step is one load through a plain base register:
// an indexed load (base+index·4) costs one more cycle on many cores, which
// would read as a quarter more than the true L1 latency. The same code runs
// natively and in WebAssembly. On Linux the buffer is mmap'd and, when
// asked, advised to use transparent huge pages.
package latency

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"
	"unsafe"
)

// NodeBytes is the size of one chain node: one cache line.
const NodeBytes = 64

const wordsPerNode = NodeBytes / 4

// CycleCounter counts the calling thread's CPU cycles (a perf counter).
type CycleCounter interface {
	Cycles() (uint64, error)
	Close() error
}

// Config configures a sweep. Zero fields take defaults.
type Config struct {
	MinBytes        int64         // smallest working set (default 4 KiB)
	MaxBytes        int64         // largest working set (default 1 GiB)
	PointsPerOctave int           // sizes per doubling (default 4)
	Reps            int           // timed samples per size, median reported (default 5)
	SampleTime      time.Duration // target duration of one sample (default 20 ms; 100 ms in wasm)
	// HugePages asks for 2 MiB transparent huge pages (Linux only).
	HugePages bool
	// WallClock times samples with the wall clock. By default the
	// thread's CPU time is used where the OS has it (Linux), so time spent
	// descheduled on a busy machine is not counted as memory latency.
	WallClock bool
	// Seed makes the random cycle reproducible (0: a fixed default).
	Seed uint64
	// OpenCycles, if set, is called on the measuring thread to count
	// cycles per access too. An error just leaves cycles out.
	OpenCycles func() (CycleCounter, error)
	// DiskBytes, if positive, extends the curve past DRAM: after the
	// sweep a file of this size in DiskDir (default os.TempDir()) is
	// read at random 4 KiB offsets (MeasureStorage) and its median read
	// becomes the last point and a level named "disk".
	DiskBytes int64
	DiskDir   string
	// Progress is called after each size with the point and the count of
	// sizes done and planned (the storage point counts as one).
	Progress func(p Point, done, total int)
}

// WithDefaults returns c with every zero field set to the value Run uses.
func (c Config) WithDefaults() Config {
	if c.MinBytes <= 0 {
		c.MinBytes = 4 << 10
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 30
	}
	if c.PointsPerOctave <= 0 {
		c.PointsPerOctave = 4
	}
	if c.Reps <= 0 {
		c.Reps = 5
	}
	if c.SampleTime <= 0 {
		c.SampleTime = 20 * time.Millisecond
		if runtime.GOOS == "js" {
			c.SampleTime = 100 * time.Millisecond // browsers coarsen timers
		}
	}
	if c.Seed == 0 {
		c.Seed = 0x9e3779b97f4a7c15
	}
	return c
}

// Point is the measured latency at one working-set size.
type Point struct {
	Bytes int64   `json:"bytes"`
	Ns    float64 `json:"ns"`     // median ns per access
	MinNs float64 `json:"min_ns"` // fastest sample
	MaxNs float64 `json:"max_ns"` // slowest sample
	// Cycles per access (median), when a cycle counter was available.
	Cycles   *float64 `json:"cycles,omitempty"`
	Accesses int64    `json:"accesses"` // loads per sample
}

// Result is a whole sweep.
type Result struct {
	Points []Point `json:"points"`
	Levels []Level `json:"levels"`
	// Caches are the sizes the OS reports, CacheSource where they came
	// from ("sysfs", "sysctl", "windows", "cpuid" or "none"; see OSCaches).
	Caches      []Cache `json:"os_caches"`
	CacheSource string  `json:"os_cache_source"`
	Pages       Pages   `json:"pages"`
	Method      string  `json:"method"`
	// Clock is "thread-cpu" (CLOCK_THREAD_CPUTIME_ID) or "wall".
	Clock    string `json:"clock"`
	Reps     int    `json:"reps"`
	SampleNs int64  `json:"sample_ns"`
	// CyclesNote says why cycles are missing, when they are.
	CyclesNote string `json:"cycles_note,omitempty"`
	// Storage is the level past DRAM when the sweep was asked for it
	// (Config.DiskBytes); its point is the last of Points and its level
	// the last of Levels, named "disk". StorageNote says why it is
	// missing when it was asked for and could not be measured.
	Storage     *Storage `json:"storage,omitempty"`
	StorageNote string   `json:"storage_note,omitempty"`
}

// Pages tells which page size backed the buffer.
type Pages struct {
	// Requested is "4KiB" or "2MiB-THP".
	Requested string `json:"requested"`
	// Used is "2MiB" when the kernel reported huge pages for the buffer,
	// "4KiB" when it reported none, "unknown" when it cannot be checked
	// (then only Requested is known).
	Used string `json:"used"`
	// HugeBytes is AnonHugePages of the buffer's mapping; BufferBytes its size.
	HugeBytes   int64  `json:"huge_bytes"`
	BufferBytes int64  `json:"buffer_bytes"`
	Detail      string `json:"detail,omitempty"`
}

// Sizes returns the working-set sizes of a sweep: PointsPerOctave sizes per
// doubling from min to max inclusive, each a multiple of NodeBytes, at
// least two nodes, ascending and distinct.
func Sizes(minBytes, maxBytes int64, perOctave int) []int64 {
	if perOctave <= 0 {
		perOctave = 1
	}
	if minBytes < 2*NodeBytes {
		minBytes = 2 * NodeBytes
	}
	if maxBytes < minBytes {
		maxBytes = minBytes
	}
	var out []int64
	octaves := math.Log2(float64(maxBytes) / float64(minBytes))
	steps := int(math.Ceil(octaves*float64(perOctave) - 1e-9))
	for i := 0; i <= steps; i++ {
		v := float64(minBytes) * math.Pow(2, float64(i)/float64(perOctave))
		b := int64(math.Round(v/NodeBytes)) * NodeBytes
		if b > maxBytes {
			b = maxBytes / NodeBytes * NodeBytes
		}
		if len(out) == 0 || b > out[len(out)-1] {
			out = append(out, b)
		}
	}
	return out
}

// Run measures every size of cfg, largest buffer allocated once. It stops
// between sizes (and samples) when ctx is cancelled, returning the points
// measured so far with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.WithDefaults()
	sizes := Sizes(cfg.MinBytes, cfg.MaxBytes, cfg.PointsPerOctave)
	maxBytes := sizes[len(sizes)-1]
	if maxBytes/NodeBytes*wordsPerNode > math.MaxUint32 {
		return nil, fmt.Errorf("latency: working set %d bytes is too large for 32-bit indices", maxBytes)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	buf, err := allocate(maxBytes, cfg.HugePages)
	if err != nil {
		return nil, fmt.Errorf("latency: allocate %d bytes: %w", maxBytes, err)
	}
	defer buf.free()

	res := &Result{
		Method:   "random cyclic pointer chase (Sattolo), one 64 B node per line, raw pointers",
		Reps:     cfg.Reps,
		SampleNs: int64(cfg.SampleTime),
	}
	res.Caches, res.CacheSource = OSCaches()

	var cc CycleCounter
	if cfg.OpenCycles != nil {
		c, err := cfg.OpenCycles()
		if err != nil {
			res.CyclesNote = "cycles not counted: " + err.Error()
		} else {
			cc = c
			defer cc.Close()
		}
	} else {
		res.CyclesNote = "cycles not counted: no cycle counter"
	}

	clock := wallClock()
	res.Clock = "wall"
	if _, ok := threadCPUClock(); ok && !cfg.WallClock {
		clock = func() time.Duration { d, _ := threadCPUClock(); return d }
		res.Clock = "thread-cpu"
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0xda3e39cb94b95bdb))
	words := buf.words
	total := len(sizes)
	if cfg.DiskBytes > 0 {
		total++
	}
	for i, size := range sizes {
		if err := ctx.Err(); err != nil {
			res.Levels = DetectLevels(res.Points)
			res.Pages = buf.pages()
			return res, err
		}
		nodes := int(size / NodeBytes)
		err := buildCycle(ctx, words[:nodes*wordsPerNode], nodes, rng)
		var p Point
		if err == nil {
			p, err = measure(ctx, linkNodes(words, nodes), cfg, cc, clock)
		}
		if err != nil {
			res.Levels = DetectLevels(res.Points)
			res.Pages = buf.pages()
			return res, err
		}
		p.Bytes = size
		res.Points = append(res.Points, p)
		if cfg.Progress != nil {
			cfg.Progress(p, i+1, total)
		}
	}
	res.Levels = DetectLevels(res.Points)
	res.Pages = buf.pages()
	if cfg.DiskBytes > 0 {
		buf.free() // the chain is done with; the file needs none of it
		if err := res.addStorage(ctx, cfg, total); err != nil {
			return res, err
		}
	}
	return res, nil
}

// addStorage measures the storage level and appends it to res as its last
// point and level. A failure other than cancellation is kept as a note:
// the memory curve stands without it.
func (res *Result) addStorage(ctx context.Context, cfg Config, total int) error {
	st, err := MeasureStorage(ctx, StorageConfig{Dir: cfg.DiskDir, Bytes: cfg.DiskBytes, Seed: cfg.Seed})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		res.StorageNote = "disk not measured: " + err.Error()
		return nil
	}
	res.Storage = st
	p := Point{Bytes: st.FileBytes, Ns: st.ReadNs, MinNs: st.MinNs, MaxNs: st.MaxNs, Accesses: int64(st.Reads)}
	res.Points = append(res.Points, p)
	res.Levels = append(res.Levels, Level{Name: "disk", Ns: st.ReadNs, FromBytes: st.FileBytes, ToBytes: st.FileBytes})
	if cfg.Progress != nil {
		cfg.Progress(p, total, total)
	}
	return nil
}

// BuildCycle links nodes 0..nodes-1 of words (16 words per node) into one
// random cycle with Sattolo's algorithm: word 16·i holds the word index of
// the node after i. Every node is visited once per lap.
func BuildCycle(words []uint32, nodes int, rng *rand.Rand) {
	_ = buildCycle(context.Background(), words, nodes, rng)
}

// buildCycle is BuildCycle, stopping with ctx's error when it is
// cancelled: it looks every 64K nodes (the swaps miss the caches, so a
// 1 GiB working set takes seconds).
func buildCycle(ctx context.Context, words []uint32, nodes int, rng *rand.Rand) error {
	for i := range nodes {
		if i&(1<<16-1) == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		words[i*wordsPerNode] = uint32(i * wordsPerNode)
	}
	for i := nodes - 1; i > 0; i-- {
		if i&(1<<16-1) == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		j := rng.IntN(i) // j < i: Sattolo, a single cycle
		a, b := i*wordsPerNode, j*wordsPerNode
		words[a], words[b] = words[b], words[a]
	}
	return nil
}

// node is one line of the chain as the chase reads it: the address of the
// next node, then padding to NodeBytes.
type node struct {
	next *node
	_    [NodeBytes - unsafe.Sizeof(uintptr(0))]byte
}

// linkNodes turns the cycle BuildCycle left in the first nodes nodes of
// words into pointers, in place, and returns the first node. The buffer
// holds no Go heap pointers (it is mmap'd, or a pointer-free slice that
// words keeps alive), so the collector need not see these.
func linkNodes(words []uint32, nodes int) *node {
	ns := unsafe.Slice((*node)(unsafe.Pointer(&words[0])), nodes)
	for i := range ns {
		next := words[i*wordsPerNode] / wordsPerNode // read before the store overwrites it
		// The slot holds index bits, which the garbage collector's write
		// barrier would read as the pointer being overwritten (and, where
		// heap addresses are small, as in WebAssembly, take for a bad heap
		// pointer): clear it with a plain store first.
		*(*uintptr)(unsafe.Pointer(&ns[i].next)) = 0
		ns[i].next = &ns[next]
	}
	return &ns[0]
}

// chase follows the chain n times (n a multiple of 8) from p.
func chase(p *node, n int) *node {
	for i := 0; i < n; i += 8 {
		p = p.next
		p = p.next
		p = p.next
		p = p.next
		p = p.next
		p = p.next
		p = p.next
		p = p.next
	}
	return p
}

// sink keeps the chase result alive so the loop is not removed.
type sink struct{ v *node }

// wallClock returns a monotonic wall clock reading function.
func wallClock() func() time.Duration {
	t0 := time.Now()
	return func() time.Duration { return time.Since(t0) }
}

func measure(ctx context.Context, p *node, cfg Config, cc CycleCounter, now func() time.Duration) (Point, error) {
	var s sink
	// Warm up and calibrate: double the count until one run takes at least
	// a quarter of the sample time.
	n := 1024
	for {
		t0 := now()
		p = chase(p, n)
		d := now() - t0
		if d >= cfg.SampleTime/4 || n >= 1<<34 {
			n = int(float64(n) * float64(cfg.SampleTime) / float64(max(d, time.Microsecond)))
			n = max(8, n/8*8)
			break
		}
		n *= 2
	}
	// A preemption during calibration makes n too small: check once more.
	t0 := now()
	p = chase(p, n)
	if d := now() - t0; d < cfg.SampleTime/2 && n < 1<<34 {
		n = int(float64(n) * float64(cfg.SampleTime) / float64(max(d, time.Microsecond)))
		n = max(8, n/8*8)
	}
	ns := make([]float64, 0, cfg.Reps)
	var cyc []float64
	for range cfg.Reps {
		if err := ctx.Err(); err != nil {
			return Point{}, err
		}
		var c0 uint64
		var cerr error
		if cc != nil {
			c0, cerr = cc.Cycles()
		}
		t0 := now()
		p = chase(p, n)
		d := now() - t0
		if cc != nil && cerr == nil {
			if c1, err := cc.Cycles(); err == nil {
				cyc = append(cyc, float64(c1-c0)/float64(n))
			}
		}
		ns = append(ns, float64(d.Nanoseconds())/float64(n))
	}
	s.v = p
	runtime.KeepAlive(s)
	pt := Point{Ns: median(ns), MinNs: slices.Min(ns), MaxNs: slices.Max(ns), Accesses: int64(n)}
	if len(cyc) == cfg.Reps {
		c := median(cyc)
		pt.Cycles = &c
	}
	return pt, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
