// Package bandwidth measures sequential memory bandwidth — read, write,
// memset and copy over buffers much larger than the last-level cache — with
// one thread and with many threads, each on its own region. It shows the
// point of the Oxla article on zeroing (blog.oxla.com, "The unexpected cost
// of shared pointers"): the memory channels are shared by every core, so N
// threads do not get N times one thread's bandwidth.
package bandwidth

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"cachebook/kernel/internal/freshmem"
	"cachebook/kernel/internal/threadclock"
)

// Op is one access pattern.
type Op string

// The operations.
const (
	// Read sums the buffer as uint64s (4 independent accumulators).
	Read Op = "read"
	// Write stores a value into every uint64 with a loop: ordinary stores,
	// each line is read for ownership first.
	Write Op = "write"
	// Memset zeroes the buffer with clear(), which the Go runtime does with
	// REP STOSQ or, for large buffers on amd64, non-temporal stores.
	Memset Op = "memset"
	// Copy copies the buffer into a second one with copy(); the reported
	// rate counts bytes copied (each is read once and written once).
	Copy Op = "copy"
)

// AllOps lists every operation in report order.
var AllOps = []Op{Read, Write, Memset, Copy}

// ParseOp parses an operation name.
func ParseOp(s string) (Op, error) {
	for _, o := range AllOps {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("unknown operation %q (want read, write, memset or copy)", s)
}

// Config configures a run. Zero fields take defaults.
type Config struct {
	// Bytes per thread (default 256 MiB).
	Bytes int64
	// Threads lists the thread counts to measure (default 1 and
	// runtime.NumCPU()).
	Threads []int
	// Ops to measure (default AllOps).
	Ops []Op
	// Reps is the number of timed repetitions, median reported (default 5).
	Reps int
	// Progress is called after each (op, threads) measurement.
	Progress func(r Result, done, total int)
}

// Result is the bandwidth of one operation at one thread count.
type Result struct {
	Op             Op      `json:"op"`
	Threads        int     `json:"threads"`
	BytesPerThread int64   `json:"bytes_per_thread"`
	GBps           float64 `json:"gb_per_s"` // median, GB = 10^9 bytes, all threads together
	MinGBps        float64 `json:"min_gb_per_s"`
	MaxGBps        float64 `json:"max_gb_per_s"`
	// PerThreadGBps is GBps / Threads.
	PerThreadGBps float64 `json:"per_thread_gb_per_s"`
	MedianNs      int64   `json:"median_ns"`
	// CPUShare is the median fraction of wall time x threads that the
	// threads were on a CPU: the rates are wall-clock figures, meaningful
	// only near 1 (0: unknown, no per-thread CPU clock).
	CPUShare float64 `json:"cpu_share"`
	// VsOne is the median over the rounds of this rate over the same op's
	// one-thread rate in the same round, Low and High its extremes (set
	// on results with more than one thread, when one thread was run).
	VsOne float64 `json:"vs_one_thread,omitempty"`
	Low   float64 `json:"low,omitempty"`
	High  float64 `json:"high,omitempty"`
	// Noisy is set when the comparison with one thread cannot be told
	// here: a round where more threads moved fewer bytes than one, or
	// threads that did not get their CPUs. Verdict states the comparison.
	Noisy   bool   `json:"noisy,omitempty"`
	Verdict string `json:"verdict,omitempty"`
}

// Report is a whole run.
type Report struct {
	Results    []Result `json:"results"`
	NumCPU     int      `json:"num_cpu"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Reps       int      `json:"reps"`
	Notes      []string `json:"notes"`
	// Verdict is the first op's comparison of its most threads with one
	// (see Result.Verdict), Noisy whether it could not be told.
	Verdict string `json:"verdict,omitempty"`
	Noisy   bool   `json:"noisy,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.Bytes <= 0 {
		c.Bytes = 256 << 20
	}
	if len(c.Threads) == 0 {
		c.Threads = DefaultThreads()
	}
	if len(c.Ops) == 0 {
		c.Ops = AllOps
	}
	if c.Reps <= 0 {
		c.Reps = 5
	}
	return c
}

// Run measures every op at every thread count.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Bytes < 4096 {
		return nil, fmt.Errorf("bandwidth: %d bytes per thread is too small", cfg.Bytes)
	}
	for _, n := range cfg.Threads {
		if n < 1 || n > 1024 {
			return nil, fmt.Errorf("bandwidth: bad thread count %d", n)
		}
	}
	rep := &Report{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Reps: cfg.Reps, Notes: []string{
		"GB = 10^9 bytes; the median of the repetitions; threads start together and the time runs until the last one ends",
		"write: a store loop (each line is read for ownership, so DRAM traffic is about twice the bytes written)",
		"memset: clear(), REP STOSQ or non-temporal stores for large buffers on amd64 (no read for ownership)",
		"copy: copy(), bytes copied per second (traffic is about twice that: each byte is read and written)",
	}}
	maxThreads := slices.Max(cfg.Threads)
	if maxThreads > rep.GOMAXPROCS {
		rep.Notes = append(rep.Notes, fmt.Sprintf("GOMAXPROCS=%d is below %d threads: some threads share a processor", rep.GOMAXPROCS, maxThreads))
	}
	// Cancelling ctx sets stop, which the measuring threads look at
	// between chunks of a millisecond or so of work; the loops here look
	// at ctx itself as often. So the run ends within a few milliseconds
	// of an interrupt, however many threads and bytes it has.
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	stopped := ctx.Err
	words := int(cfg.Bytes / 8)
	nbuf := maxThreads
	if slices.Contains(cfg.Ops, Copy) {
		nbuf *= 2 // a destination per thread
	}
	bufs, release, err := buffers(nbuf, words)
	if err != nil {
		return rep, err
	}
	// Released once the run has returned, the measuring threads all done
	// with the buffers, without making the caller wait: handing back a
	// gigabyte of written pages takes the kernel a tenth of a second or
	// more.
	defer func() { go release() }()
	src, dst := bufs[:maxThreads], bufs[maxThreads:]
	if len(dst) == 0 {
		dst = nil
	}
	for i := range src {
		// Write every page first: untouched anonymous memory reads as the
		// kernel's shared zero page, which stays in cache, so a read pass
		// over it would measure the cache, not DRAM.
		for c := range chunks(Write, words) {
			if err := stopped(); err != nil {
				return rep, err
			}
			fill(src[i][c.lo:c.hi], uint64(i)+1)
		}
	}
	total := len(cfg.Ops) * len(cfg.Threads)
	done := 0
	for _, op := range cfg.Ops {
		// One untimed pass per thread count faults the pages in and warms
		// the path; then the thread counts take turns, round after round
		// (forwards, then backwards), so that a busy stretch of the machine
		// falls on all of them rather than on one count's block of runs.
		for _, n := range cfg.Threads {
			runOnce(op, n, src, dst, &stop)
		}
		secs := make([][]float64, len(cfg.Threads))
		shares := make([][]float64, len(cfg.Threads))
		for round := range cfg.Reps {
			for j := range cfg.Threads {
				i := j
				if round%2 == 1 {
					i = len(cfg.Threads) - 1 - j
				}
				if err := stopped(); err != nil {
					return rep, err
				}
				p := runOnce(op, cfg.Threads[i], src, dst, &stop)
				secs[i] = append(secs[i], p.wall.Seconds())
				shares[i] = append(shares[i], p.share())
			}
		}
		if err := stopped(); err != nil { // the last pass may have been cut short
			return rep, err
		}
		results := make([]Result, len(cfg.Threads))
		for i, n := range cfg.Threads {
			results[i] = summarize(op, n, cfg.Bytes, secs[i])
			results[i].CPUShare = median(shares[i])
		}
		compare(results, secs)
		for _, r := range results {
			rep.Results = append(rep.Results, r)
			if r.Verdict != "" {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s", r.Op, r.Verdict))
				if rep.Verdict == "" {
					rep.Verdict, rep.Noisy = string(r.Op)+": "+r.Verdict, r.Noisy
				}
			}
			done++
			if cfg.Progress != nil {
				cfg.Progress(r, done, total)
			}
		}
	}
	return rep, nil
}

// summarize turns per-repetition times into rates.
func summarize(op Op, threads int, bytes int64, secs []float64) Result {
	total := float64(bytes) * float64(threads)
	rates := make([]float64, len(secs))
	for i, s := range secs {
		rates[i] = total / max(s, 1e-9) / 1e9
	}
	r := Result{Op: op, Threads: threads, BytesPerThread: bytes,
		GBps: median(rates), MinGBps: slices.Min(rates), MaxGBps: slices.Max(rates),
		MedianNs: int64(median(secs) * 1e9)}
	r.PerThreadGBps = r.GBps / float64(threads)
	return r
}

// minCPUShare is the least CPU share at which a multi-thread rate counts:
// below it the threads took turns on the cores instead of running at once.
const minCPUShare = 0.75

// compare sets VsOne, Low, High, Noisy and Verdict on the results with
// more than one thread, from the per-round times secs (secs[i] are
// results[i]'s rounds, taken in the same alternations).
func compare(results []Result, secs [][]float64) {
	one := slices.IndexFunc(results, func(r Result) bool { return r.Threads == 1 })
	if one < 0 {
		return
	}
	for i := range results {
		r := &results[i]
		if r.Threads <= 1 {
			continue
		}
		n := min(len(secs[i]), len(secs[one]))
		ratios := make([]float64, 0, n)
		for k := range n {
			// bytes per second, n threads over one thread's
			ratios = append(ratios, float64(r.Threads)*secs[one][k]/max(secs[i][k], 1e-12))
		}
		if len(ratios) == 0 {
			continue
		}
		r.VsOne, r.Low, r.High = median(ratios), slices.Min(ratios), slices.Max(ratios)
		spread := fmt.Sprintf("%.2f–%.2f over %d alternations", r.Low, r.High, len(ratios))
		shares := fmt.Sprintf("CPU share %.0f%% with %d threads, %.0f%% with one", 100*r.CPUShare, r.Threads, 100*results[one].CPUShare)
		switch {
		case r.CPUShare > 0 && r.CPUShare < minCPUShare || results[one].CPUShare > 0 && results[one].CPUShare < minCPUShare:
			r.Noisy = true
			r.Verdict = fmt.Sprintf("too noisy to tell here — the threads did not get their CPUs (%s; %d threads moved %.2f× one thread's bytes per second, %s); the model says %d threads move more than one but less than %d×, since they share the memory channels; run it again on a quieter machine",
				shares, r.Threads, r.VsOne, spread, r.Threads, r.Threads)
		case r.Low < 1:
			r.Noisy = true
			r.Verdict = fmt.Sprintf("too noisy to tell here — %d threads moved fewer bytes per second than one in some rounds (%.2f×, %s; %s); the model says %d threads move more than one but less than %d×, since they share the memory channels; run it again on a quieter machine",
				r.Threads, r.VsOne, spread, shares, r.Threads, r.Threads)
		case r.VsOne < 0.9*float64(r.Threads):
			r.Verdict = fmt.Sprintf("%d threads move %.2f× one thread's bytes per second (%s; %s): not %d×, the memory channels are shared",
				r.Threads, r.VsOne, spread, shares, r.Threads)
		default:
			r.Verdict = fmt.Sprintf("%d threads move %.2f× one thread's bytes per second (%s; %s): close to %d×, so one thread did not fill the memory channels here",
				r.Threads, r.VsOne, spread, shares, r.Threads)
		}
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// buffers returns n buffers of words words each and the function that
// releases them. Where freshmem can map memory they lie in one fresh
// mapping, whose pages the kernel zeroes as the chunked, interruptible
// loops first write them; made on the Go heap, they may reuse memory an
// earlier cell freed and be cleared first, all at once, for hundreds of
// milliseconds no interrupt can cut short on a VM where faults are dear.
func buffers(n, words int) ([][]uint64, func(), error) {
	var all []uint64
	release := func() {}
	if ok, _ := freshmem.Supported(); ok {
		b, unmap, err := freshmem.Map(n * words * 8)
		if err != nil {
			return nil, nil, fmt.Errorf("bandwidth: %w", err)
		}
		all, release = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n*words), func() { unmap() }
	} else {
		all = make([]uint64, n*words)
	}
	bufs := make([][]uint64, n)
	for i := range bufs {
		bufs[i] = all[i*words : (i+1)*words : (i+1)*words]
	}
	return bufs, release, nil
}

// sinks keep read results alive, one padded slot per thread.
type sinkSlot struct {
	v uint64
	_ [56]byte
}

// pass is what runOnce measured.
type pass struct {
	wall time.Duration   // from the common start to the end of the slowest thread
	cpu  []time.Duration // each thread's CPU time (0 where unknown)
}

// share is the fraction of wall x threads the threads were on a CPU: near
// 1 when they all ran throughout, lower when they waited for a core (0
// when unknown).
func (p pass) share() float64 {
	var c time.Duration
	for _, d := range p.cpu {
		c += d
	}
	if p.wall <= 0 || c <= 0 {
		return 0
	}
	return float64(c) / (float64(p.wall) * float64(len(p.cpu)))
}

// runOnce runs op on n threads at once and returns the wall time from the
// common start to the end of the slowest thread, and each thread's CPU
// time. Each thread works through its buffer in chunks and gives up,
// leaving the rest, once stop is set; the caller then throws the time away.
func runOnce(op Op, n int, src, dst [][]uint64, stop *atomic.Bool) pass {
	var ready, finished sync.WaitGroup
	start := make(chan struct{})
	sinks := make([]sinkSlot, n)
	cpu := make([]time.Duration, n)
	ready.Add(n)
	finished.Add(n)
	for t := range n {
		go func() {
			defer finished.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-start
			c0 := threadclock.CPU()
			defer func() { cpu[t] = threadclock.CPU() - c0 }()
			for c := range chunks(op, len(src[t])) {
				if stop.Load() {
					return
				}
				s, d := src[t][c.lo:c.hi], []uint64(nil)
				if dst != nil {
					d = dst[t][c.lo:c.hi]
				}
				switch op {
				case Read:
					sinks[t].v += sum(s)
				case Write:
					fill(s, uint64(t)+1)
				case Memset:
					clear(s)
				case Copy:
					copy(d, s)
				}
			}
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	finished.Wait()
	d := time.Since(t0)
	runtime.KeepAlive(sinks)
	return pass{wall: d, cpu: cpu}
}

// chunkBytes is the work between two looks at the stop flag: 4 MiB, a
// millisecond or less at DRAM bandwidth, and above the 1 MiB from which
// the runtime's copy switches to non-temporal stores on amd64.
const chunkBytes = 4 << 20

// memsetChunkBytes is the smallest chunk of a memset: clear() zeroes
// 32 MiB and more with non-temporal stores on amd64, and a chunk must keep
// the same instructions as the whole buffer (8 ms at 4 GB/s).
const memsetChunkBytes = 32 << 20

// span is a chunk of a buffer, in words.
type span struct{ lo, hi int }

// chunks splits a buffer of words into the chunks op works through: of
// chunkBytes, or for a memset of a buffer of 32 MiB or more, equal chunks
// of 32 to 64 MiB (a smaller tail would be cleared with ordinary stores).
func chunks(op Op, words int) iter.Seq[span] {
	size := chunkBytes / 8
	if op == Memset {
		const m = memsetChunkBytes / 8
		k := max(1, words/m)
		size = (words + k - 1) / k
	}
	return func(yield func(span) bool) {
		for lo := 0; lo < words; lo += size {
			if !yield(span{lo, min(lo+size, words)}) {
				return
			}
		}
	}
}

func sum(b []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+4 <= len(b); i += 4 {
		s0 += b[i]
		s1 += b[i+1]
		s2 += b[i+2]
		s3 += b[i+3]
	}
	for ; i < len(b); i++ {
		s0 += b[i]
	}
	return s0 + s1 + s2 + s3
}

func fill(b []uint64, v uint64) {
	for i := range b {
		b[i] = v
	}
}
