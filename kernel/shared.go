package kernel

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// AttrAgain is the cell attribute (again=1) that asks for a fresh
// measurement even when a shared one is fresh: a learner's "measure again".
const AttrAgain = "again"

// SharedMeasurements lets the sessions of one server share their
// measurement cells: a latency, bandwidth or sweep cell whose kind,
// parameters and limits match a measurement of the same server taken less
// than Fresh ago gets that measurement at once, labelled with its time
// (the "shared" member of its measurement output), instead of queueing to
// measure the same hardware again; one that arrives while such a
// measurement runs waits for it rather than queueing behind it. A cell
// with again=1 always measures, and its result replaces the shared one;
// while it runs, a cell that finds no fresh measurement waits for it too
// (so a background refresh started before the shared measurement expires
// is what the next learner gets, not a run of its own). Classroom mode
// uses it so that a class of thirty does not measure one server thirty
// times. It is safe for concurrent use.
type SharedMeasurements struct {
	// Fresh is how long a measurement is shared (5 minutes).
	Fresh time.Duration
	// Now is the clock (nil: time.Now); tests step it.
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]*sharedRun
	// again holds the measure-again run in flight of each key: the
	// latest, when several are.
	again map[string]*sharedRun
	// typical is a moving average of the measurement runs' durations, for
	// the waits the queue expects.
	typical time.Duration
}

// sharedRun is one measurement, running (done open) or finished.
type sharedRun struct {
	done    chan struct{}
	started time.Time
	// Set before done closes.
	out *Outcome
	at  time.Time
	run time.Duration
	ok  bool

	// relays get the live output (progress, the growing curve) of the
	// run, for the cells waiting for it.
	relayMu sync.Mutex
	relays  map[int]func(Message)
	next    int
}

// relay passes a live output message of the run to its waiters.
func (r *sharedRun) relay(m Message) {
	switch m.Header.MsgType {
	case MsgDisplayData, MsgUpdateDisplayData:
	default:
		return
	}
	r.relayMu.Lock()
	defer r.relayMu.Unlock()
	for _, f := range r.relays {
		f(m)
	}
}

// waiters counts the cells waiting for the run.
func (r *sharedRun) waiters() int {
	r.relayMu.Lock()
	defer r.relayMu.Unlock()
	return len(r.relays)
}

// listen adds a waiter's relay and returns the function that removes it.
func (r *sharedRun) listen(f func(Message)) (stop func()) {
	r.relayMu.Lock()
	defer r.relayMu.Unlock()
	if r.relays == nil {
		r.relays = map[int]func(Message){}
	}
	id := r.next
	r.next++
	r.relays[id] = f
	return func() {
		r.relayMu.Lock()
		delete(r.relays, id)
		r.relayMu.Unlock()
	}
}

// sharedKinds are the kinds whose cells share: measurements whose result
// depends only on their parameters and the machine, not on the session.
var sharedKinds = map[string]bool{KindLatency: true, KindBandwidth: true, KindSweep: true}

func (m *SharedMeasurements) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Window returns how long a measurement is shared (Fresh, or its
// default).
func (m *SharedMeasurements) Window() time.Duration { return m.fresh() }

func (m *SharedMeasurements) fresh() time.Duration {
	if m.Fresh > 0 {
		return m.Fresh
	}
	return 5 * time.Minute
}

// sharedKey returns the key under which cell's measurement is shared, or
// "" when it does not share (another kind, again=1, unreadable
// parameters, or predicted rounds that need a run of their own).
func sharedKey(cell Cell, lim Limits) string {
	kind := kindOf(cell)
	if !sharedKinds[kind] || cell.Attrs[AttrAgain] != "" {
		return ""
	}
	p, _, err := cellParams(cell, false)
	if err != nil {
		return ""
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		if k != AttrAgain {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s|mem=%d|threads=%d", kind, lim.CellMemory, lim.Threads)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%s", k, p[k])
	}
	return b.String()
}

// lookup returns the fresh finished run for key, or the running one to
// wait for, or (when there is neither) registers a new run the caller
// leads and must end with finish.
func (m *SharedMeasurements) lookup(key string) (hit, wait, lead *sharedRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]*sharedRun{}
	}
	now := m.now()
	for k, r := range m.entries {
		if isClosed(r.done) && now.Sub(r.at) > m.fresh() {
			delete(m.entries, k)
		}
	}
	if r := m.entries[key]; r != nil {
		if !isClosed(r.done) {
			return nil, r, nil
		}
		if r.ok {
			return r, nil, nil
		}
	}
	if r := m.again[key]; r != nil {
		return nil, r, nil
	}
	r := &sharedRun{done: make(chan struct{}), started: now}
	m.entries[key] = r
	return nil, nil, r
}

// measureAgain registers a measure-again run of key that the caller
// leads and must end with finish: cells that find no fresh measurement
// of key wait for it.
func (m *SharedMeasurements) measureAgain(key string) *sharedRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.again == nil {
		m.again = map[string]*sharedRun{}
	}
	r := &sharedRun{done: make(chan struct{}), started: m.now()}
	m.again[key] = r
	return r
}

// finish ends a run the caller led (a first run or a measure-again): a
// successful one is shared from now on, a failed one is forgotten (its
// waiters then measure themselves).
func (m *SharedMeasurements) finish(key string, r *sharedRun, out *Outcome, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	r.out, r.at, r.run, r.ok = out, now, now.Sub(r.started), ok && out != nil
	if r.ok {
		if m.typical == 0 {
			m.typical = r.run
		} else {
			m.typical = (3*m.typical + r.run) / 4
		}
	}
	if m.again[key] == r {
		delete(m.again, key)
	}
	switch old := m.entries[key]; {
	case old == r:
		if !r.ok {
			delete(m.entries, key)
		}
	case r.ok && (old == nil || isClosed(old.done)):
		// A measure-again run (the latest, or one a later one
		// overtook): it is the freshest result. A first run in flight
		// stores its own when it ends.
		if m.entries == nil {
			m.entries = map[string]*sharedRun{}
		}
		m.entries[key] = r
	}
	close(r.done)
}

// SharedState is what a SharedMeasurements holds of one measurement.
type SharedState struct {
	// At is when the shared measurement was taken and Expires when it
	// stops being shared; both zero when there is no fresh one.
	At, Expires time.Time
	// Running tells that a run of it is in flight (a first run or a
	// measure-again), started at Started; Waiters cells wait for it.
	Running bool
	Started time.Time
	Waiters int
}

// State returns what is known of the measurement shared under key (see
// Kernel.SharedKey).
func (m *SharedMeasurements) State(key string) SharedState {
	m.mu.Lock()
	defer m.mu.Unlock()
	var st SharedState
	now := m.now()
	for _, r := range []*sharedRun{m.entries[key], m.again[key]} {
		switch {
		case r == nil:
		case !isClosed(r.done):
			if !st.Running || r.started.Before(st.Started) {
				st.Started = r.started
			}
			st.Running = true
			st.Waiters += r.waiters()
		case r.ok && now.Sub(r.at) <= m.fresh():
			st.At, st.Expires = r.at, r.at.Add(m.fresh())
		}
	}
	return st
}

// SharedKey returns the key under which cell's measurement is shared in
// this kernel (its kind, parameters and limits; a measure-again
// attribute aside), or "" when the cell does not share.
func (s *Kernel) SharedKey(cell Cell) string {
	cell.Attrs = withoutAgain(cell.Attrs)
	return sharedKey(cell, s.x.Limits())
}

// Typical returns the moving average of the shared measurements' run
// times (0 before the first).
func (m *SharedMeasurements) Typical() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.typical
}

// remaining estimates how long run r still takes.
func (m *SharedMeasurements) remaining(r *sharedRun) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.typical == 0 {
		return 0
	}
	return max(0, m.typical-m.now().Sub(r.started))
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// SharedInfo is the "shared" member of a measurement output that came
// from another cell's run: when it was measured and how long it took.
type SharedInfo struct {
	// At is when the measurement finished (RFC 3339, UTC).
	At string `json:"at"`
	// RunNs is how long it ran.
	RunNs int64 `json:"run_ns"`
	// Source names what was measured ("server").
	Source string `json:"source"`
}

// sharedOutcome is out labelled as a shared measurement: a copy of its
// data whose measurement output has a "shared" member.
func sharedOutcome(r *sharedRun) *Outcome {
	data := make(map[string]any, len(r.out.Data))
	for k, v := range r.out.Data {
		data[k] = v
	}
	if mm, ok := data[MIMEMeasurement].(map[string]any); ok {
		c := make(map[string]any, len(mm)+1)
		for k, v := range mm {
			c[k] = v
		}
		c["shared"] = SharedInfo{At: r.at.UTC().Format(time.RFC3339), RunNs: r.run.Nanoseconds(), Source: "server"}
		data[MIMEMeasurement] = c
	}
	if t, ok := data[MIMEText].(string); ok {
		data[MIMEText] = fmt.Sprintf("shared measurement of this server, taken at %s (run again with again=1 to measure anew)\n%s",
			r.at.UTC().Format("15:04:05 UTC"), t)
	}
	return &Outcome{Data: data}
}

// deliverShared answers a cell with a shared measurement: its input, the
// labelled result, its prediction graded against it, and the reply.
func (x *Executor) deliverShared(cell Cell, r *sharedRun, queued time.Duration, emit func(Message)) *Reply {
	x.mu.Lock()
	x.count++
	count, session := x.count, x.session
	x.mu.Unlock()
	emit(NewMessage(ChannelIOPub, MsgExecuteInput, session, Header{}, ExecuteInput{Code: cell.Source, Kind: kindOf(cell), CellID: cell.ID, ExecutionCount: count}))
	out := sharedOutcome(r)
	emit(NewMessage(ChannelIOPub, MsgExecuteResult, session, Header{}, ExecuteResult{
		ExecutionCount: count, CellID: cell.ID, Data: out.Data, Metadata: map[string]any{}}))
	x.emitPrediction(cell, out, nil, session, emit)
	return &Reply{ExecuteReply: ExecuteReply{Status: StatusOK, ExecutionCount: count, CellID: cell.ID,
		Timings: &Timings{QueuedNs: queued.Nanoseconds(), TotalNs: queued.Nanoseconds()}}, Outcome: out}
}

// runShared answers j from a shared measurement when there is one, or
// waits for the one in flight; it reports whether it answered. When it
// did not, lead (if not nil) is the run the caller now leads.
func (s *Kernel) runShared(ctx context.Context, j *job, sh *SharedMeasurements, key string) (answered bool, lead *sharedRun) {
	hit, wait, lead := sh.lookup(key)
	for tries := 0; wait != nil && tries < 3; tries++ {
		if answered, ok := s.waitShared(ctx, j, sh, wait); answered {
			return true, nil
		} else if ok {
			hit = wait
			break
		}
		// The run failed (interrupted, out of time): look again, so
		// that one of its waiters leads the next run and the others
		// wait for that one.
		hit, wait, lead = sh.lookup(key)
	}
	if hit == nil {
		return false, lead
	}
	s.Broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req, Status{ExecutionState: StateBusy}))
	emit := func(m Message) {
		m.ParentHeader = j.req
		s.Broadcast(m)
	}
	reply := s.x.deliverShared(j.cell, hit, time.Since(j.enq), emit)
	s.Broadcast(NewMessage(j.channel, MsgExecuteReply, s.x.KernelSession(), j.req, reply.ExecuteReply))
	if s.m.cfg.OnCellDone != nil {
		s.m.cfg.OnCellDone(kindOf(j.cell), reply.Status, 0)
	}
	return true, nil
}

// waitShared waits for another session's run of j's measurement,
// relaying its live output. It reports whether it answered j (an
// interrupt: aborted) and whether the run succeeded.
func (s *Kernel) waitShared(ctx context.Context, j *job, sh *SharedMeasurements, wait *sharedRun) (answered, ok bool) {
	s.Broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req,
		Status{ExecutionState: StateQueued, Shared: true, ExpectedWaitNs: sh.remaining(wait).Nanoseconds()}))
	// The waiting cell shows the run's progress as it goes.
	stop := wait.listen(func(m Message) {
		m.Header.MsgID, m.Header.Session, m.ParentHeader = NewID(), s.x.KernelSession(), j.req
		s.Broadcast(m)
	})
	defer stop()
	select {
	case <-wait.done:
	case <-ctx.Done():
		s.Broadcast(NewMessage(j.channel, MsgExecuteReply, s.x.KernelSession(), j.req,
			ExecuteReply{Status: StatusAborted, CellID: j.cell.ID, Evalue: "interrupted before it started"}))
		return true, false
	}
	return false, wait.ok
}

// withoutAgain is attrs less AttrAgain.
func withoutAgain(attrs map[string]string) map[string]string {
	c := make(map[string]string, len(attrs))
	for k, v := range attrs {
		if k != AttrAgain {
			c[k] = v
		}
	}
	return c
}
