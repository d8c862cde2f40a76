package engine

import (
	"runtime"
	"sync"
	"time"

	"cachebook/engine/agg"
)

// workerPhase is one phase of a parallel operator's work, done by every
// worker in its share.
type workerPhase struct {
	name string
	// start, if set, runs once before any worker starts the phase, after
	// every worker finished the one before.
	start func() error
	// run does worker w's share; slot is w's index from 0. It returns the
	// rows it did and the time it spent waiting for the operator's
	// consumer, which is not the phase's time.
	run func(w, slot int) (rows int64, wait time.Duration, err error)
}

// runWorkers runs an operator's phases on threads workers, one phase after
// another: a phase starts once every worker has finished the one before,
// and none starts after a worker failed. With one thread the phases run on
// the calling goroutine as worker 0 (the statement's); otherwise worker w
// (1 to threads) runs on a goroutine of its own, locked to its OS thread
// when the hooks ask for it, between their WorkerStart and WorkerStop.
// Each phase is bracketed by the hooks' PhaseStart and PhaseEnd and timed
// per worker; a panic on a worker becomes an *agg.PanicError. It returns
// each worker's share of each phase, in the order they finished, and the
// first error.
func (x *execCtx) runWorkers(threads int, phases ...workerPhase) ([]WorkerStat, error) {
	var mu sync.Mutex
	var stats []WorkerStat
	phase := func(w, slot int, ph workerPhase) error {
		x.phaseStart(w, ph.name)
		defer x.phaseEnd(w, ph.name) // a panic too ends the phase
		t0 := time.Now()
		rows, wait, err := ph.run(w, slot)
		d := time.Since(t0) - wait
		mu.Lock()
		stats = append(stats, WorkerStat{Worker: w, Phase: ph.name, Rows: rows, Time: d})
		mu.Unlock()
		return err
	}
	if threads <= 1 {
		for _, ph := range phases {
			if ph.start != nil {
				if err := ph.start(); err != nil {
					return stats, err
				}
			}
			if err := agg.Safely(0, func() error { return phase(0, 0, ph) }); err != nil {
				return stats, err
			}
		}
		return stats, nil
	}

	errs := make([]error, threads)
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	fail := func(slot int, err error) {
		mu.Lock()
		if errs[slot] == nil {
			errs[slot] = err
		}
		mu.Unlock()
	}
	// A barrier per phase, and the phase's start run by the first worker
	// past it while the others wait.
	barriers := make([]sync.WaitGroup, len(phases))
	starts := make([]sync.Once, len(phases))
	startErrs := make([]error, len(phases))
	for i := range barriers {
		barriers[i].Add(threads)
	}
	var wg sync.WaitGroup
	for slot := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := slot + 1
			if x.hooks != nil && x.hooks.LockThreads {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			if x.hooks != nil && x.hooks.WorkerStart != nil {
				if err := agg.Safely(w, func() error { x.hooks.WorkerStart(w); return nil }); err != nil {
					fail(slot, err)
				}
			}
			if x.hooks != nil && x.hooks.WorkerStop != nil {
				defer func() {
					if err := agg.Safely(w, func() error { x.hooks.WorkerStop(w); return nil }); err != nil {
						fail(slot, err)
					}
				}()
			}
			for i, ph := range phases {
				if i > 0 {
					barriers[i-1].Done()
					barriers[i-1].Wait()
				}
				if failed() != nil {
					continue // through the barriers, so that none waits for it
				}
				if ph.start != nil {
					starts[i].Do(func() { startErrs[i] = agg.Safely(w, ph.start) })
					if startErrs[i] != nil {
						fail(slot, startErrs[i])
						continue
					}
				}
				if err := agg.Safely(w, func() error { return phase(w, slot, ph) }); err != nil {
					fail(slot, err)
				}
			}
		}()
	}
	wg.Wait()
	return stats, failed()
}
