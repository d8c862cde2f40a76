package web

// The class's own measurements: the server measures, in the background,
// the server-side measurement cells a class is about to run — the first
// lesson's when it starts (ClassConfig.Prepare), a pushed lesson's when
// the teacher pushes it — so that the learners who run them get a fresh
// shared result at once (kernel.SharedMeasurements) instead of waiting
// for a first run; and while learners are connected it measures them
// again shortly before their shared result expires, so that no learner
// waits for an expired one.
//
// It never competes with the learners: a measurement starts only when no
// cell runs or waits for the machine, and one that runs gives way (it is
// interrupted, and tried again later) as soon as any cell waits for the
// machine — a learner's "measure again" included — unless learners wait
// for its result. One runs at a time, in WarmSession.

import (
	"log/slog"
	"sync"
	"time"

	"cachebook/kernel"
)

// WarmSession is the kernel session that takes the class's background
// measurements. It runs under a learner's limits (ClassConfig.CellMemory),
// so that its measurements are the ones the learners' cells ask for.
const WarmSession = "classwarm"

// Why a background measurement runs (BackgroundView.Why).
const (
	WarmStart   = "start"   // the server started: the first lesson's cells
	WarmPush    = "push"    // the teacher pushed the cell's lesson
	WarmRefresh = "refresh" // its shared result was about to expire, with learners connected
)

// warmCell is one measurement cell the class will run, as the warmer
// measures it.
type warmCell struct {
	lesson string // the lesson's id
	number int    // its place in the lesson list (1: first; 0: not listed)
	title  string
	cell   kernel.Cell
	key    string // its shared measurement's key
	why    string // WarmStart or WarmPush
	// stay: one of the first lesson's cells, prepared at the start; a
	// later push does not drop it.
	stay bool
	// pending: not yet measured for why; it is measured even when no
	// learner is connected.
	pending bool
	lastRun time.Duration // its latest background run
	// retry: not before then (wall clock), after a failure or giving way.
	retry  time.Time
	yields int // times in a row it gave way to a learner's cell
}

// warmRun is the background measurement in flight.
type warmRun struct {
	cell    *warmCell
	why     string
	started time.Time // on the class's clock
}

// warmer takes the class's background measurements (see the file's
// comment).
type warmer struct {
	s       *Server
	c       *class
	sh      *kernel.SharedMeasurements
	log     *slog.Logger
	tick    time.Duration
	refresh bool // keep the results fresh while learners are connected
	wake    chan struct{}

	mu      sync.Mutex
	cells   []*warmCell // the pushed lesson's, then the first lesson's
	running *warmRun
	runs    int // background measurements started
	yields  int // of which gave way to a learner's cell
}

// newWarmer returns the class's warmer, or nil when the server cannot
// measure for the class (no shared measurements or no lessons).
func newWarmer(s *Server) *warmer {
	c := s.class
	if c == nil || c.shared == nil || s.cfg.Lessons == nil {
		return nil
	}
	tick := c.cfg.warmTick
	if tick <= 0 {
		tick = 250 * time.Millisecond
	}
	return &warmer{s: s, c: c, sh: c.shared, log: s.log, tick: tick, refresh: c.cfg.Prepare, wake: make(chan struct{}, 1)}
}

// start queues the first lesson's measurement cells (with Prepare) and
// runs the warmer until the class stops.
func (w *warmer) start() {
	if w.c.cfg.Prepare {
		if ls, err := w.s.cfg.Lessons.List(); err != nil {
			w.log.Warn("class: cannot list the lessons to measure", "err", err)
		} else if len(ls) > 0 {
			w.add(ls[0].ID, WarmStart)
		}
	}
	go w.run()
}

// push queues the measurement cells of the lesson the teacher pushed,
// first; those of an earlier push (but the first lesson's) are dropped.
func (w *warmer) push(lesson string) {
	if lesson == "" {
		return
	}
	w.add(lesson, WarmPush)
}

// add queues lesson's measurement cells for why, ahead of the others.
func (w *warmer) add(lesson, why string) {
	cells, err := w.lessonCells(lesson, why)
	if err != nil {
		w.log.Warn("class: cannot prepare the lesson's measurements", "lesson", lesson, "err", err)
		return
	}
	if len(cells) == 0 {
		return
	}
	w.mu.Lock()
	keep := cells
	for _, old := range w.cells {
		dup := false
		for _, c := range cells {
			if c.key == old.key {
				dup = true
				c.stay = c.stay || old.stay
				c.lastRun = old.lastRun
			}
		}
		if !dup && (old.stay || why == WarmStart) {
			keep = append(keep, old)
		}
	}
	w.cells = keep
	w.mu.Unlock()
	w.c.markDirty()
	w.poke()
}

// lessonCells returns the server-side measurement cells of lesson.
func (w *warmer) lessonCells(lesson, why string) ([]*warmCell, error) {
	nb, err := w.s.cfg.Lessons.Open(lesson)
	if err != nil {
		return nil, err
	}
	k, err := w.kernel()
	if err != nil {
		return nil, err
	}
	number, title := 0, ""
	if ls, err := w.s.cfg.Lessons.List(); err == nil {
		for i, l := range ls {
			if l.ID == lesson {
				number, title = i+1, l.Title
			}
		}
	}
	var cells []*warmCell
	for _, c := range nb.Cells {
		kc := kernel.Cell{ID: c.ID, Kind: string(c.Kind), Source: c.Source, Attrs: c.Attrs}
		if key := k.SharedKey(kc); key != "" {
			cells = append(cells, &warmCell{lesson: lesson, number: number, title: title, cell: kc, key: key, why: why, pending: true,
				stay: why == WarmStart})
		}
	}
	return cells, nil
}

// kernel returns WarmSession's kernel, starting it if needed.
func (w *warmer) kernel() (*kernel.Kernel, error) {
	if k, ok := w.s.mgr.Kernel(WarmSession); ok {
		return k, nil
	}
	sub, err := w.s.mgr.Attach(WarmSession, 0)
	if err != nil {
		return nil, err
	}
	k := sub.Kernel()
	sub.Close()
	return k, nil
}

// poke wakes the warmer.
func (w *warmer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run measures, one at a time, what next picks, while the machine is idle.
func (w *warmer) run() {
	t := time.NewTicker(w.tick)
	defer t.Stop()
	for {
		select {
		case <-w.c.done:
			return
		case <-t.C:
		case <-w.wake:
		}
		if !w.idle() {
			continue
		}
		if wc, why := w.next(); wc != nil {
			w.measure(wc, why)
		}
	}
}

// idle reports whether no cell runs or waits for the machine.
func (w *warmer) idle() bool {
	st := w.s.mgr.Scheduler().Stats()
	return st.Running == 0 && st.Waiting == 0
}

// margin is how long before its shared result expires cell wc is
// measured again: three of its runs, at least 30 s, at most half the
// sharing window.
func (w *warmer) margin(wc *warmCell) time.Duration {
	run := wc.lastRun
	if run == 0 {
		run = w.sh.Typical()
	}
	return min(max(3*run, 30*time.Second), w.sh.Window()/2)
}

// next returns the cell to measure now and why, or nil: a pending cell
// (start, push) without a fresh result, or one whose result is about to
// expire (or has) while learners are connected.
func (w *warmer) next() (*warmCell, string) {
	present := w.refresh && w.c.learnersPresent()
	now, wall := w.c.now(), time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wc := range w.cells {
		if wall.Before(wc.retry) {
			continue
		}
		st := w.sh.State(wc.key)
		if st.Running {
			continue // someone measures it now
		}
		soon := st.At.IsZero() || st.Expires.Sub(now) <= w.margin(wc)
		switch {
		case wc.pending && soon:
			return wc, wc.why
		case wc.pending:
			wc.pending = false // a learner's run measured it meanwhile
		}
		if present && soon {
			return wc, WarmRefresh
		}
	}
	return nil, ""
}

// measure runs wc in WarmSession as a measure-again (so that cells that
// find no fresh result wait for it, and its result is the one shared)
// and waits for its reply, interrupting it when a cell waits for the
// machine and nobody waits for its result.
func (w *warmer) measure(wc *warmCell, why string) {
	sub, err := w.s.mgr.Attach(WarmSession, 0)
	if err != nil {
		w.log.Warn("class: cannot start a background measurement", "lesson", wc.lesson, "cell", wc.cell.ID, "err", err)
		w.mu.Lock()
		wc.retry = time.Now().Add(time.Minute)
		w.mu.Unlock()
		return
	}
	defer sub.Close()
	k := sub.Kernel()
	attrs := make(map[string]string, len(wc.cell.Attrs)+2)
	for a, v := range wc.cell.Attrs {
		attrs[a] = v
	}
	attrs[kernel.AttrAgain] = "1"
	attrs["timeout"] = w.c.cfg.CellTimeout.String()
	req := kernel.NewMessage(kernel.ChannelShell, kernel.MsgExecuteRequest, WarmSession, kernel.Header{},
		kernel.ExecuteRequest{Code: wc.cell.Source, Kind: wc.cell.Kind, Attrs: attrs, CellID: wc.cell.ID})
	started, wall := w.c.now(), time.Now()
	w.mu.Lock()
	w.running = &warmRun{cell: wc, why: why, started: started}
	w.runs++
	w.mu.Unlock()
	w.c.markDirty()
	w.log.Info("class: measuring in the background", "lesson", wc.lesson, "cell", wc.cell.ID, "why", why)
	var reply kernel.ExecuteReply
	yielded := false
	if err := k.Handle(sub, &req); err != nil {
		w.log.Warn("class: cannot start a background measurement", "lesson", wc.lesson, "cell", wc.cell.ID, "err", err)
		reply.Status = kernel.StatusError
	} else {
		reply, yielded = w.await(k, sub, req.Header.MsgID, wc.key)
	}
	status := reply.Status
	w.mu.Lock()
	w.running = nil
	switch {
	case status == kernel.StatusOK:
		wc.pending, wc.lastRun, wc.yields = false, time.Since(wall), 0
	case yielded:
		// Give way for longer each time in a row (2 s, 4 s, … 30 s), so
		// that a class busy with short cells is not slowed by starts
		// that give way.
		wc.yields++
		w.yields++
		wc.retry = time.Now().Add(min(time.Duration(wc.yields)*8*w.tick, 120*w.tick))
	case status != "":
		wc.pending = false
		wc.retry = time.Now().Add(w.sh.Window())
		w.log.Warn("class: a background measurement failed; not tried again for a while", "lesson", wc.lesson, "cell", wc.cell.ID,
			"status", status, "ename", reply.Ename, "evalue", reply.Evalue)
	}
	w.mu.Unlock()
	w.c.markDirty()
}

// await reads WarmSession's frames until the reply to msgID and returns
// it (its status "" when the session or the class ended first) and
// whether the warmer interrupted it to give way.
func (w *warmer) await(k *kernel.Kernel, sub *kernel.Subscription, msgID, key string) (reply kernel.ExecuteReply, yielded bool) {
	t := time.NewTicker(w.tick)
	defer t.Stop()
	// A cell runs at most the class's cell timeout, then gets its
	// interrupt grace.
	limit := time.NewTimer(w.c.cfg.CellTimeout + time.Minute)
	defer limit.Stop()
	interrupt := func() {
		m := kernel.NewMessage(kernel.ChannelControl, kernel.MsgInterruptRequest, WarmSession, kernel.Header{}, map[string]any{})
		if err := k.Handle(sub, &m); err != nil {
			w.log.Warn("class: cannot interrupt a background measurement", "err", err)
		}
	}
	for {
		select {
		case data, ok := <-sub.C:
			if !ok {
				return reply, yielded
			}
			m, err := kernel.Decode(data, 0)
			if err != nil || m.ParentHeader.MsgID != msgID || m.Header.MsgType != kernel.MsgExecuteReply {
				continue
			}
			if err := m.DecodeContent(&reply); err != nil {
				reply.Status, reply.Evalue = kernel.StatusError, err.Error()
			}
			return reply, yielded
		case <-t.C:
			// Give way to any cell waiting for the machine, unless
			// learners wait for this result.
			if !yielded && w.s.mgr.Scheduler().Stats().Waiting > 0 && w.sh.State(key).Waiters == 0 {
				yielded = true
				interrupt()
			}
		case <-limit.C:
			interrupt()
			return reply, yielded
		case <-w.c.done:
			return reply, yielded
		}
	}
}

// BackgroundView is a measurement the server takes for the class in the
// background (ClassSnapshot.Measuring).
type BackgroundView struct {
	Lesson       string `json:"lesson"`
	LessonNumber int    `json:"lesson_number,omitempty"`
	LessonTitle  string `json:"lesson_title,omitempty"`
	Cell         string `json:"cell,omitempty"`
	Kind         string `json:"kind"`
	// Why is WarmStart, WarmPush or WarmRefresh.
	Why       string `json:"why"`
	StartedAt string `json:"started_at"`
	// ExpectedMs estimates the whole run (0: unknown).
	ExpectedMs float64 `json:"expected_ms,omitempty"`
}

// PreparedView is one of the measurement cells the server measures for
// the class, and its shared result.
type PreparedView struct {
	Lesson       string `json:"lesson"`
	LessonNumber int    `json:"lesson_number,omitempty"`
	Cell         string `json:"cell,omitempty"`
	Kind         string `json:"kind"`
	// MeasuredAt and FreshUntil bound its fresh shared result (RFC 3339;
	// empty: none).
	MeasuredAt string `json:"measured_at,omitempty"`
	FreshUntil string `json:"fresh_until,omitempty"`
	// Running tells that a run of it is in flight (the server's or a
	// learner's), Waiters how many cells wait for it.
	Running bool `json:"running,omitempty"`
	Waiters int  `json:"waiters,omitempty"`
	// GaveWay counts the times in a row its background run gave way to a
	// learner's cell; it is tried again when the machine is idle.
	GaveWay int `json:"gave_way,omitempty"`
}

// views returns the background measurement running (nil: none) and the
// cells the warmer keeps.
func (w *warmer) views() (*BackgroundView, []PreparedView) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var bg *BackgroundView
	if r := w.running; r != nil {
		wc := r.cell
		exp := wc.lastRun
		if exp == 0 {
			exp = w.sh.Typical()
		}
		bg = &BackgroundView{Lesson: wc.lesson, LessonNumber: wc.number, LessonTitle: wc.title, Cell: wc.cell.ID, Kind: wc.cell.Kind,
			Why: r.why, StartedAt: r.started.UTC().Format(time.RFC3339), ExpectedMs: float64(exp) / 1e6}
	}
	prepared := make([]PreparedView, 0, len(w.cells))
	for _, wc := range w.cells {
		st := w.sh.State(wc.key)
		v := PreparedView{Lesson: wc.lesson, LessonNumber: wc.number, Cell: wc.cell.ID, Kind: wc.cell.Kind, Running: st.Running, Waiters: st.Waiters,
			GaveWay: wc.yields}
		if !st.At.IsZero() {
			v.MeasuredAt, v.FreshUntil = st.At.UTC().Format(time.RFC3339), st.Expires.UTC().Format(time.RFC3339)
		}
		prepared = append(prepared, v)
	}
	return bg, prepared
}

// stats returns how many background measurements started and how many of
// them gave way to a learner's cell.
func (w *warmer) stats() (runs, yields int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs, w.yields
}

// learnersPresent reports whether a learner has a kernel websocket or a
// class event stream open.
func (c *class) learnersPresent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.learners {
		if l.connections > 0 || len(l.events) > 0 {
			return true
		}
	}
	return false
}

// markDirty asks for a new snapshot of the class view.
func (c *class) markDirty() {
	c.mu.Lock()
	c.dirty = true
	c.mu.Unlock()
}
