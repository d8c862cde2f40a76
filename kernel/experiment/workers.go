package experiment

import (
	"context"
	"runtime"
	"sync"
	"time"

	"cachebook/kernel/internal/threadclock"
)

// runStats is what runWorkers measured.
type runStats struct {
	// Wall is the time from the workers' release until the last finished.
	Wall time.Duration
	// CPU is each worker's thread CPU time spent in its body; all zero
	// where the OS gives no per-thread CPU clock.
	CPU []time.Duration
	// Faults is each worker's page faults during its body (minor and
	// major; all zero where the OS does not count them per thread).
	Faults []int64
	// Serial is set when the workers ran one after another (see
	// withSerialWorkers): Wall is then the longest worker's time, as if
	// each had a core of its own.
	Serial bool
}

// FaultsTotal is the page faults of all workers together.
func (s runStats) FaultsTotal() int64 {
	var t int64
	for _, f := range s.Faults {
		t += f
	}
	return t
}

// CPUTotal is the CPU time of all workers together.
func (s runStats) CPUTotal() time.Duration {
	var t time.Duration
	for _, c := range s.CPU {
		t += c
	}
	return t
}

// CPUShare is the fraction of Wall x workers that the workers were
// actually on a CPU: near 1 on an idle machine, lower when other processes
// took turns on the cores (0 when unknown).
func (s runStats) CPUShare() float64 {
	if s.Wall <= 0 || len(s.CPU) == 0 {
		return 0
	}
	return float64(s.CPUTotal()) / (float64(s.Wall) * float64(len(s.CPU)))
}

// runWorkers starts n goroutines, releases them together and measures the
// wall time from the release until the last one finished, and each
// worker's thread CPU time. Every worker is locked to its OS thread (the
// CPU clock is per thread) and runs body(worker) between the hooks'
// WorkerStart and WorkerStop. The first error returned by a body is
// returned; bodies should poll ctx themselves in their loops.
func runWorkers(ctx context.Context, hooks *Hooks, label string, n int, body func(worker int) error) (runStats, error) {
	stats := runStats{CPU: make([]time.Duration, n), Faults: make([]int64, n)}
	if err := ctx.Err(); err != nil {
		return stats, err
	}
	if hooks != nil && hooks.RunStart != nil {
		hooks.RunStart(label, n)
	}
	if serialWorkers(ctx) {
		return runSerial(ctx, hooks, label, n, body, stats)
	}
	var (
		ready sync.WaitGroup
		done  sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	release := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for w := range n {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if hooks != nil && hooks.WorkerStart != nil {
				hooks.WorkerStart(w)
			}
			ready.Done()
			<-release
			f0, c0 := threadclock.Faults(), threadclock.CPU()
			err := body(w)
			stats.CPU[w] = threadclock.CPU() - c0
			stats.Faults[w] = threadclock.Faults() - f0
			if hooks != nil && hooks.WorkerStop != nil {
				hooks.WorkerStop(w)
			}
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
			}
		}()
	}
	ready.Wait()
	start := time.Now()
	close(release)
	done.Wait()
	stats.Wall = time.Since(start)
	if hooks != nil && hooks.RunEnd != nil {
		hooks.RunEnd(label)
	}
	if first == nil {
		first = ctx.Err()
	}
	return stats, first
}

// serialKey marks a context whose workers run one after another (see
// withSerialWorkers).
type serialKey struct{}

// withSerialWorkers returns ctx marked so that runWorkers runs its workers
// one after another on the calling goroutine and reports, as their wall
// time, the longest of them: the time they would take on cores of their
// own. It is the scheduling model of a one-thread runtime (the browser),
// for experiments whose workers never wait for each other.
func withSerialWorkers(ctx context.Context) context.Context {
	return context.WithValue(ctx, serialKey{}, true)
}

func serialWorkers(ctx context.Context) bool {
	v, _ := ctx.Value(serialKey{}).(bool)
	return v
}

// runSerial is runWorkers for a context marked by withSerialWorkers: each
// worker's time is its body's CPU time (wall time where there is no thread
// clock), alone on the thread.
func runSerial(ctx context.Context, hooks *Hooks, label string, n int, body func(worker int) error, stats runStats) (runStats, error) {
	var first error
	stats.Serial = true
	runtime.LockOSThread() // one thread's CPU clock for every body
	defer runtime.UnlockOSThread()
	for w := range n {
		if hooks != nil && hooks.WorkerStart != nil {
			hooks.WorkerStart(w)
		}
		t0, c0 := time.Now(), threadclock.CPU()
		err := body(w)
		// Its CPU time where the OS has a thread clock (a busy machine's
		// preemptions left out), else its wall time (the browser).
		stats.CPU[w] = threadclock.CPU() - c0
		if stats.CPU[w] <= 0 {
			stats.CPU[w] = time.Since(t0)
		}
		stats.Wall = max(stats.Wall, stats.CPU[w])
		if hooks != nil && hooks.WorkerStop != nil {
			hooks.WorkerStop(w)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if hooks != nil && hooks.RunEnd != nil {
		hooks.RunEnd(label)
	}
	if first == nil {
		first = ctx.Err()
	}
	return stats, first
}

// splitmix64 is a small, fast, well-mixed pseudo-random generator; each
// worker owns one, so random keys cost no synchronisation.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// mix64 is a bijective hash of a 64-bit key (the splitmix64 finaliser).
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
