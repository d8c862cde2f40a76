package kernel

import (
	"fmt"
	"sync"
	"time"

	"cachebook/engine"
	"cachebook/kernel/perf"
)

// perfProbe probes perf-counter availability once and shares the result.
type perfProbe struct {
	once  sync.Once
	avail perf.Availability
}

func (p *perfProbe) get() *perf.Availability {
	p.once.Do(func() { p.avail = perf.Probe() })
	return &p.avail
}

// counterSet collects perf counters per worker thread and per phase around
// one sql cell (package kernel/perf), and shows live snapshots while the
// query runs. Where the host has no counters the report says why for every
// event; nothing is made up.
type counterSet struct {
	meter *perf.QueryMeter
	stop  chan struct{}
	done  chan struct{}
}

// startCounters wraps hooks so that the query's workers are counted and
// starts the live display (at most Limits.UpdateInterval apart).
func startCounters(probe *perfProbe, hooks *engine.Hooks, env *Env) (*engine.Hooks, *counterSet) {
	c := &counterSet{
		meter: perf.NewQueryMeter(perf.Options{Availability: probe.get()}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	id := env.DisplayID("counters")
	every := max(env.Limits().UpdateInterval, 250*time.Millisecond)
	go func() {
		defer close(c.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				snap := c.meter.Snapshot()
				env.Display(id, map[string]any{MIMECounters: snap, MIMEText: fmt.Sprintf("counters after %v", time.Since(env.Started()).Round(time.Millisecond))})
			}
		}
	}()
	return c.meter.Hooks(hooks), c
}

// finish stops the live display and returns the cell's counter report.
func (c *counterSet) finish() any {
	close(c.stop)
	<-c.done
	return c.meter.Report()
}
