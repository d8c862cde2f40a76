package perf

import (
	"sync"
	"time"

	"cachebook/engine"
)

// Options configures a QueryMeter.
type Options struct {
	// NoHardware skips generic hardware events (cycles, instructions...).
	NoHardware bool
	// NoRaw skips the CPU's raw vendor recipe.
	NoRaw bool
	// Availability, when non-nil, is a previous Probe result to reuse
	// instead of probing again (the kernel probes once at startup).
	Availability *Availability
}

// threadCounters are the counter groups open on one OS thread.
type threadCounters interface {
	// read fills dst (one entry per group); a group that failed to open
	// is left with nil Values.
	read(dst []GroupReading) error
	close()
}

// QueryMeter counts events per worker thread and per phase of one query.
// Its hook functions may be called from many worker goroutines at once;
// Snapshot and Report may be called from any goroutine at any time.
type QueryMeter struct {
	avail       Availability
	events      []Event     // every event, in report order
	groups      []GroupSpec // groups to open, only probed-available events
	names       [][]string
	unavailable map[string]Reason

	mu         sync.Mutex
	workers    map[int]*workerState
	phases     map[string]map[int]counts
	phaseOrder []string
	first      time.Time
	last       time.Time
	active     int
}

type phaseMark struct {
	at    []GroupReading
	cs    uint64
	csOK  bool
	start time.Time
}

type workerState struct {
	mu      sync.Mutex
	tc      threadCounters
	failed  map[string]Reason
	base    phaseMark
	phases  map[string]phaseMark
	total   counts
	wall    time.Duration
	started bool
}

// NewQueryMeter returns a meter for one query. It probes which events can
// be opened (or reuses opts.Availability) and opens nothing yet: groups
// are opened on each worker's own thread in WorkerStart.
func NewQueryMeter(opts Options) *QueryMeter {
	var a Availability
	if opts.Availability != nil {
		a = *opts.Availability
	} else {
		a = Probe()
	}
	m := &QueryMeter{
		avail:       a,
		unavailable: map[string]Reason{},
		workers:     map[int]*workerState{},
		phases:      map[string]map[int]counts{},
	}
	byGroup := map[string][]EventStatus{}
	for _, st := range a.Events {
		byGroup[st.Group] = append(byGroup[st.Group], st)
	}
	for _, g := range plannedGroups(a.CPU, opts) {
		usable := GroupSpec{Name: g.Name}
		for _, ev := range g.Events {
			m.events = append(m.events, ev)
			st, ok := findStatus(byGroup[g.Name], ev.Name)
			switch {
			case !ok:
				m.unavailable[ev.Name] = Reason{Code: ReasonUnknown, Message: "not probed"}
			case !st.Available:
				if st.Reason != nil {
					m.unavailable[ev.Name] = *st.Reason
				} else {
					m.unavailable[ev.Name] = Reason{Code: ReasonUnknown, Message: "unavailable"}
				}
			default:
				if ev.Kind == KindSoftware && a.SoftwareKernel {
					ev.KernelToo = true
				}
				usable.Events = append(usable.Events, ev)
			}
		}
		if g.Name == "software" {
			m.events = append(m.events, Event{Name: EvContextSwitches, Desc: "voluntary + involuntary context switches", Kind: KindRusage})
			if !rusageAvailable {
				m.unavailable[EvContextSwitches] = unavailableHere()
			}
		}
		if len(usable.Events) > 0 {
			m.groups = append(m.groups, usable)
			names := make([]string, len(usable.Events))
			for i, ev := range usable.Events {
				names[i] = ev.Name
			}
			m.names = append(m.names, names)
		}
	}
	return m
}

func findStatus(list []EventStatus, name string) (EventStatus, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return EventStatus{}, false
}

// plannedGroups are the groups a meter with opts would open on cpu.
func plannedGroups(cpu CPU, opts Options) []GroupSpec {
	groups := []GroupSpec{SoftwareGroup()}
	if !opts.NoHardware {
		groups = append(groups, GenericGroups()...)
	}
	if !opts.NoRaw {
		groups = append(groups, ChooseRecipe(cpu).Groups...)
	}
	return groups
}

// Availability returns the probe result the meter works with.
func (m *QueryMeter) Availability() Availability { return m.avail }

// Hooks returns engine hooks that count per worker thread and then call
// next's hooks (next may be nil). LockThreads is always set: per-thread
// counters count the OS thread, so the worker must stay on it.
func (m *QueryMeter) Hooks(next *engine.Hooks) *engine.Hooks {
	h := &engine.Hooks{LockThreads: true}
	var n engine.Hooks
	if next != nil {
		n = *next
	}
	h.WorkerStart = func(w int) {
		m.WorkerStart(w)
		if n.WorkerStart != nil {
			n.WorkerStart(w)
		}
	}
	h.WorkerStop = func(w int) {
		if n.WorkerStop != nil {
			n.WorkerStop(w)
		}
		m.WorkerStop(w)
	}
	h.PhaseStart = func(w int, phase string) {
		m.PhaseStart(w, phase)
		if n.PhaseStart != nil {
			n.PhaseStart(w, phase)
		}
	}
	h.PhaseEnd = func(w int, phase string) {
		if n.PhaseEnd != nil {
			n.PhaseEnd(w, phase)
		}
		m.PhaseEnd(w, phase)
	}
	h.Progress = n.Progress
	return h
}

func (m *QueryMeter) worker(w int) *workerState {
	m.mu.Lock()
	defer m.mu.Unlock()
	ws := m.workers[w]
	if ws == nil {
		ws = &workerState{total: counts{}, phases: map[string]phaseMark{}}
		m.workers[w] = ws
	}
	return ws
}

// mark reads the worker's groups and its thread's context switches. It
// must run on the worker's thread with ws.mu held.
func (m *QueryMeter) mark(ws *workerState) phaseMark {
	pm := phaseMark{start: time.Now()}
	if ws.tc != nil {
		pm.at = make([]GroupReading, len(m.groups))
		if err := ws.tc.read(pm.at); err != nil {
			pm.at = nil
		}
	}
	pm.cs, pm.csOK = threadContextSwitches()
	return pm
}

// addInterval adds the counts between from and to into c.
func (m *QueryMeter) addInterval(c counts, from, to phaseMark) {
	if from.at != nil && to.at != nil {
		for i := range m.groups {
			if from.at[i].Values == nil || to.at[i].Values == nil {
				continue
			}
			c.addGroup(m.names[i], Delta(from.at[i], to.at[i]))
		}
	}
	if from.csOK && to.csOK {
		c.addValue(EvContextSwitches, sub(to.cs, from.cs))
	}
}

// WorkerStart opens the counter groups on the calling thread. Call it on
// the worker's goroutine, locked to its OS thread.
func (m *QueryMeter) WorkerStart(w int) {
	ws := m.worker(w)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.started { // a second start without stop: keep the open interval
		return
	}
	m.mu.Lock()
	if m.first.IsZero() {
		m.first = time.Now()
	}
	m.active++
	m.mu.Unlock()

	tc, failed := openThread(m.groups)
	ws.tc = tc
	for k, v := range failed {
		if ws.failed == nil {
			ws.failed = map[string]Reason{}
		}
		ws.failed[k] = v
	}
	ws.base = m.mark(ws)
	ws.started = true
}

// WorkerStop reads the final counts and closes the worker's groups.
func (m *QueryMeter) WorkerStop(w int) {
	ws := m.worker(w)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ws.started {
		return
	}
	end := m.mark(ws)
	m.addInterval(ws.total, ws.base, end)
	ws.wall += end.start.Sub(ws.base.start)
	ws.started = false
	if ws.tc != nil {
		ws.tc.close()
		ws.tc = nil
	}
	m.mu.Lock()
	m.last = time.Now()
	m.active--
	m.mu.Unlock()
}

// PhaseStart marks the start of a phase on worker w (on its thread).
func (m *QueryMeter) PhaseStart(w int, phase string) {
	ws := m.worker(w)
	ws.mu.Lock()
	ws.phases[phase] = m.mark(ws)
	ws.mu.Unlock()
}

// PhaseEnd adds the counts since PhaseStart to the phase's totals.
func (m *QueryMeter) PhaseEnd(w int, phase string) {
	ws := m.worker(w)
	ws.mu.Lock()
	start, ok := ws.phases[phase]
	if !ok {
		ws.mu.Unlock()
		return
	}
	end := m.mark(ws)
	delete(ws.phases, phase)
	ws.mu.Unlock()

	c := counts{}
	m.addInterval(c, start, end)
	c.addValue("wall", uint64(end.start.Sub(start.start)))

	m.mu.Lock()
	defer m.mu.Unlock()
	pw := m.phases[phase]
	if pw == nil {
		pw = map[int]counts{}
		m.phases[phase] = pw
		m.phaseOrder = append(m.phaseOrder, phase)
	}
	if pw[w] == nil {
		pw[w] = counts{}
	}
	pw[w].merge(c)
}

// Report returns the readings of finished intervals: per worker, per phase
// and in total.
func (m *QueryMeter) Report() *Report { return m.report(false) }

// Snapshot returns the readings so far, including the running intervals of
// workers that have not stopped (their groups are read from this
// goroutine; reading another thread's counter is allowed). Context
// switches of running intervals appear only once they end.
func (m *QueryMeter) Snapshot() *Report { return m.report(true) }

func (m *QueryMeter) report(live bool) *Report {
	m.mu.Lock()
	ids := sortedKeys(m.workers)
	wss := make([]*workerState, len(ids))
	for i, id := range ids {
		wss[i] = m.workers[id]
	}
	first, last, active := m.first, m.last, m.active
	phaseOrder := append([]string(nil), m.phaseOrder...)
	phases := make(map[string]map[int]counts, len(m.phases))
	for p, pw := range m.phases {
		cp := make(map[int]counts, len(pw))
		for w, c := range pw {
			cp[w] = c.clone()
		}
		phases[p] = cp
	}
	m.mu.Unlock()

	now := time.Now()
	if active > 0 || last.Before(first) {
		last = now
	}
	rep := &Report{Live: live, Availability: m.avail}
	if !first.IsZero() {
		rep.WallNs = int64(last.Sub(first))
	}
	recipe := m.avail.Recipe
	total := counts{}
	for i, ws := range wss {
		ws.mu.Lock()
		c := ws.total.clone()
		wall := ws.wall
		if live && ws.started {
			cur := phaseMark{start: now}
			if ws.tc != nil {
				cur.at = make([]GroupReading, len(m.groups))
				if err := ws.tc.read(cur.at); err != nil {
					cur.at = nil
				}
			}
			m.addInterval(c, ws.base, cur)
			wall += now.Sub(ws.base.start)
		}
		unavail := m.unavailableFor(ws.failed)
		ws.mu.Unlock()
		total.merge(c)
		rep.Workers = append(rep.Workers, WorkerReadings{Worker: ids[i], WallNs: int64(wall),
			Readings: buildReadings(m.events, unavail, c, recipe, int64(wall))})
	}
	rep.Total = buildReadings(m.events, m.unavailable, total, recipe, rep.WallNs)
	for _, p := range phaseOrder {
		pw := phases[p]
		pr := PhaseReadings{Phase: p}
		pt := counts{}
		var maxWall int64
		for _, w := range sortedKeys(pw) {
			c := pw[w]
			wall := int64(0)
			if x := c["wall"]; x != nil {
				wall = int64(x.raw)
			}
			maxWall = max(maxWall, wall)
			pt.merge(c)
			pr.Workers = append(pr.Workers, WorkerReadings{Worker: w, WallNs: wall,
				Readings: buildReadings(m.events, m.unavailable, c, recipe, wall)})
		}
		pr.Total = buildReadings(m.events, m.unavailable, pt, recipe, maxWall)
		rep.Phases = append(rep.Phases, pr)
	}
	if rep.Workers == nil {
		rep.Workers = []WorkerReadings{}
	}
	if rep.Phases == nil {
		rep.Phases = []PhaseReadings{}
	}
	return rep
}

func (m *QueryMeter) unavailableFor(failed map[string]Reason) map[string]Reason {
	if len(failed) == 0 {
		return m.unavailable
	}
	u := make(map[string]Reason, len(m.unavailable)+len(failed))
	for k, v := range m.unavailable {
		u[k] = v
	}
	for k, v := range failed {
		u[k] = v
	}
	return u
}
