package web

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/kernel"
	"cachebook/notebook/predict"
)

// ClassConfig turns on classroom mode (cachebook serve --class NAME): the
// server's token becomes the teacher's, learners join with a short code
// and a display name and get an identity, a notebook folder and kernel
// sessions of their own (docs/classroom.md).
type ClassConfig struct {
	// Name is the class's name, shown on every page.
	Name string
	// Code is the join code learners type (empty: a random one).
	Code string
	// MaxLearners bounds the roster (200).
	MaxLearners int
	// WrongCodes bounds the wrong join codes one address may send (20
	// at once, then one every 3 s): past it, every join from that
	// address is refused with 429 and Retry-After until its bucket
	// refills, the right code included (or guessing would go on).
	WrongCodes Rate
	// Joins bounds the successful joins of the whole class (40 at once,
	// then 5 a second): a class arriving at once behind one address (a
	// school's NAT, a reverse proxy) gets in within a minute, a script
	// cannot fill the roster before the teacher sees it happen. Learners
	// are not capped per address.
	Joins Rate
	// Now is the class's clock (nil: time.Now); tests step it.
	Now func() time.Time
	// MaxSessions bounds the kernel sessions (tabs) of one learner (3).
	MaxSessions int
	// MaxQueued bounds the cells one learner may have queued or running
	// at once, across its sessions (3); more are refused with QueueFull.
	MaxQueued int
	// CellTimeout caps how long a learner's cell may run (2 min); a
	// learner's timeout attribute can only lower it.
	CellTimeout time.Duration
	// Share is how long a measurement of the server is shared with every
	// learner who runs the same cell (5 min): they get it at once,
	// labelled with its time, and may ask to measure again. Negative: no
	// sharing, every learner's measurement cell measures.
	Share time.Duration
	// CellMemory caps the memory one cell of a learner may use, when it
	// is below the server's cell memory (0: the server's): measurement
	// cells and experiments size their buffers against it. A learner's
	// cells together hold at most MaxSessions times it, since a session
	// runs one cell at a time.
	CellMemory int64
	// Prepare has the server measure, in the background, the first
	// lesson's server-side measurement cells when it starts, and measure
	// the shared results of those and of a pushed lesson's again shortly
	// before they expire while learners are connected (class_warm.go), so
	// that the first learners, and the later ones, get a fresh shared
	// result at once. A pushed lesson's cells are measured when pushed
	// either way. Nothing is measured while a learner's cell runs or
	// waits.
	Prepare bool

	// warmTick is how often the background measurements look for work
	// (250 ms); tests shorten it.
	warmTick time.Duration
}

// Errors of classroom mode, as the enames of refused cells.
const (
	ErrLocked = "Locked"
)

// DemoSession is the kernel session the teacher's projector demo runs in;
// learners watch its outputs through their class event stream.
const DemoSession = "classdemo"

// learnerIDLen is the number of hex digits of a learner id.
const learnerIDLen = 12

// codeAlphabet has no 0/O, 1/I/L: join codes are read off a projector.
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// errForbidden refuses a request of a role that may not make it.
var errForbidden = errors.New("forbidden")

// role is who sent a request.
type role int

const (
	roleNone role = iota
	roleTeacher
	roleLearner
)

func (r role) String() string { return [...]string{"anonymous", "teacher", "learner"}[r] }

// identity is the sender of a request: its role and, for a learner, which.
type identity struct {
	role    role
	learner *learner
}

// learner is one member of the roster. Its fields are guarded by the
// class's mutex.
type learner struct {
	ID      string
	Name    string
	token   string
	joined  time.Time
	removed bool

	// sessions counts the open websockets of each kernel session of the
	// learner that has one; only those count against MaxSessions.
	// detached holds the sessions whose last websocket closed, oldest
	// first, at most MaxSessions: they keep their replay for a tab that
	// comes back, and older ones are shut down.
	sessions    map[string]int
	detached    []string
	connections int
	pending     map[string]pendingCell // by execute_request msg_id, until observe sees the reply
	// inflight holds the cells the learner's limit counts: sent and not
	// yet answered. The tap removes a cell as its reply is broadcast, so
	// that a learner who has its reply may send the next cell at once.
	// Guarded by inflightMu, which is never held while taking another lock.
	inflightMu  sync.Mutex
	inflight    map[string]time.Time
	cells       int             // cells finished
	totals      []time.Duration // run+queue time of its cells, newest last (at most 256)
	running     string          // kind of the running cell ("" idle)
	runningCell string
	queued      bool
	measWaits   int           // measurement cells that waited for the measurement core
	lastWait    time.Duration // how long its latest measurement waited
	curve       []curvePoint
	curveAt     time.Time
	// curveShared is when the server measured the shared curve the
	// learner got (zero: the learner's own run on the server).
	curveShared time.Time
	ownCurve    *ownCurve // its latest curve measured in its own browser
	// queuedAt is when the learner's waiting cell was queued; sharedWait
	// tells that it waits for another learner's run of the same
	// measurement; expectedWait is the kernel's estimate of the wait.
	queuedAt     time.Time
	queuedKind   string
	sharedWait   bool
	expectedWait time.Duration
	predictions  map[string]*predict.Outcome // by cell
	predSource   map[string]string           // by cell: SourceOwn when measured in its browser
	sql          map[string]*sqlResult       // by cell
	events       map[chan []byte]bool        // its open event streams
}

// pendingCell is a cell a learner sent that has not been answered yet.
type pendingCell struct {
	kind, cell string
	sent       time.Time
}

type curvePoint struct {
	Bytes int64   `json:"bytes"`
	Ns    float64 `json:"ns"`
}

// MIMEPrediction is the MIME type of a prediction cell's display output.
const MIMEPrediction = kernel.MIMEPrediction

// sqlResult is what the class view compares of one SQL cell's run.
type sqlResult struct {
	TimeNs   int64    `json:"time_ns"`
	Rows     int64    `json:"rows"`
	Strategy []string `json:"strategy,omitempty"`
	// Counters are the measured counters of the cell (the perf report's
	// totals and derived figures), when it collected them; Modelled the
	// cache model's figures of its last GROUP BY, when it ran with
	// model=true. A few each, so that the snapshot stays small.
	Counters []figure `json:"counters,omitempty"`
	Modelled []figure `json:"modelled,omitempty"`
	At       string   `json:"at"`
}

// classFrame is a frame a learner's (or the demo) kernel broadcast.
type classFrame struct {
	session string
	data    []byte
}

// class is the state of classroom mode: the roster, the teacher's locks
// and pushes, and the event streams of the class view and the learners.
type class struct {
	cfg  ClassConfig
	root string // the notebooks directory ("" without one)
	// shared is the server's shared measurements (nil: none), for the
	// roster's expected waits.
	shared *kernel.SharedMeasurements
	// warm takes the class's background measurements (nil: none).
	warm *warmer
	// measRuns are the run times of the latest measurement cells (at
	// most 16), for the expected waits when nothing is shared.
	measRuns []time.Duration
	frames   chan classFrame
	done     chan struct{}
	// dropped counts frames the tap could not keep up with.
	dropped atomic.Int64
	// index maps learner ids to learners for the tap, which may not take
	// mu (it runs under a kernel's lock).
	index sync.Map

	mu       sync.Mutex
	learners map[string]*learner
	byToken  map[string]*learner
	// removedTok holds the tokens of removed learners (at most
	// MaxLearners, oldest dropped), so that their tabs are told why they
	// are refused.
	removedTok []string
	order      []string // learner ids in joining order
	locks      map[string]bool
	push       map[string]any // the latest push ("open this now")
	teachers   map[chan []byte]bool
	dirty      bool
	stopped    bool

	now        func() time.Time
	wrongCodes *limiter // by address
	joins      *limiter // one bucket for the class
	// joinLog holds the times of the latest joins (the last minute's);
	// refused counts the joins refused, by why.
	joinLog []time.Time
	refused JoinRefusals
}

// JoinRefusals counts the joins the class refused, by why.
type JoinRefusals struct {
	WrongCode int `json:"wrong_code"`
	Name      int `json:"name"`
	Full      int `json:"full"`
	Rate      int `json:"rate"`
}

func newClass(cfg ClassConfig, notebooksRoot string) *class {
	if cfg.MaxLearners <= 0 {
		cfg.MaxLearners = 200
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 3
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = 3
	}
	if cfg.CellTimeout <= 0 {
		cfg.CellTimeout = 2 * time.Minute
	}
	if cfg.Code == "" {
		cfg.Code = newCode(6)
	}
	cfg.Code = strings.ToUpper(cfg.Code)
	if cfg.WrongCodes.Burst <= 0 {
		cfg.WrongCodes = Rate{Burst: 20, Every: 3 * time.Second}
	}
	if cfg.Joins.Burst <= 0 {
		cfg.Joins = Rate{Burst: 40, Every: 200 * time.Millisecond}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &class{cfg: cfg, root: notebooksRoot, frames: make(chan classFrame, 8192), done: make(chan struct{}),
		learners: map[string]*learner{}, byToken: map[string]*learner{}, locks: map[string]bool{},
		teachers: map[chan []byte]bool{}, now: now,
		wrongCodes: newLimiter(cfg.WrongCodes, now), joins: newLimiter(cfg.Joins, now)}
}

func newCode(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

func newLearnerID() string {
	var b [learnerIDLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// prefix is the start of every kernel session id of learner id.
func prefix(id string) string { return "l" + id + "_" }

// learnerOfSession returns the learner id a kernel session id belongs to,
// or "".
func learnerOfSession(session string) string {
	if len(session) > learnerIDLen+2 && session[0] == 'l' && session[learnerIDLen+1] == '_' {
		id := session[1 : learnerIDLen+1]
		for i := 0; i < len(id); i++ {
			if !(id[i] >= '0' && id[i] <= '9' || id[i] >= 'a' && id[i] <= 'f') {
				return ""
			}
		}
		return id
	}
	return ""
}

// tap receives every frame the kernels broadcast (kernel lock held): it
// keeps those of learners' sessions and of the demo, without blocking.
func (c *class) tap(session string, data []byte) {
	id := learnerOfSession(session)
	if session != DemoSession && id == "" {
		return
	}
	if id != "" && bytes.Contains(data, []byte(`"msg_type":"execute_reply"`)) {
		if v, ok := c.index.Load(id); ok {
			var m struct {
				ParentHeader kernel.Header `json:"parent_header"`
			}
			if json.Unmarshal(data, &m) == nil {
				l := v.(*learner)
				l.inflightMu.Lock()
				delete(l.inflight, m.ParentHeader.MsgID)
				l.inflightMu.Unlock()
			}
		}
	}
	select {
	case c.frames <- classFrame{session, data}:
	default:
		// No lock here: tap runs under the kernel's lock.
		c.dropped.Add(1)
	}
}

// retryError is a refusal that may be tried again after a while: the
// HTTP reply says when (Retry-After).
type retryError struct {
	err   error
	after time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// retryAfter returns how long err says to wait, or 0.
func retryAfter(err error) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return re.after
	}
	return 0
}

// seconds is d as whole seconds, rounded up, at least 1.
func seconds(d time.Duration) int64 { return max(1, int64((d+time.Second-1)/time.Second)) }

// join adds a learner to the roster when code is the class's code. addr
// is the rate-limit key of the sender's address (addrKey).
func (c *class) join(addr, code, name string) (*learner, error) {
	if d := c.wrongCodes.wait(addr); d > 0 {
		c.refuse(func(r *JoinRefusals) { r.WrongCode++ })
		return nil, &retryError{fmt.Errorf("%w: too many wrong join codes from your network; try again in %d s", errTooMany, seconds(d)), d}
	}
	if subtle.ConstantTimeCompare([]byte(strings.ToUpper(strings.TrimSpace(code))), []byte(c.cfg.Code)) != 1 {
		c.wrongCodes.spend(addr)
		c.refuse(func(r *JoinRefusals) { r.WrongCode++ })
		return nil, fmt.Errorf("%w: wrong join code", errForbidden)
	}
	name, err := cleanName(name)
	if err != nil {
		c.refuse(func(r *JoinRefusals) { r.Name++ })
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirty = true
	if len(c.learners) >= c.cfg.MaxLearners {
		c.refused.Full++
		return nil, fmt.Errorf("%w: the class is full (%d learners); tell the teacher", errUnavailable, c.cfg.MaxLearners)
	}
	if ok, d := c.joins.take(""); !ok {
		c.refused.Rate++
		return nil, &retryError{fmt.Errorf("%w: many learners are joining at once; trying again in %d s", errTooMany, seconds(d)), d}
	}
	now := c.now()
	l := &learner{ID: newLearnerID(), Name: name, token: NewToken(), joined: now,
		sessions: map[string]int{}, pending: map[string]pendingCell{}, inflight: map[string]time.Time{},
		predictions: map[string]*predict.Outcome{}, predSource: map[string]string{}, sql: map[string]*sqlResult{}, events: map[chan []byte]bool{}}
	c.learners[l.ID] = l
	c.index.Store(l.ID, l)
	c.byToken[l.token] = l
	c.order = append(c.order, l.ID)
	c.joinLog = append(c.joinLog, now)
	c.trimJoinLog(now)
	return l, nil
}

// refuse counts a refused join.
func (c *class) refuse(count func(*JoinRefusals)) {
	c.mu.Lock()
	count(&c.refused)
	c.dirty = true
	c.mu.Unlock()
}

// joinWindow is how far back the class view's join rate looks.
const joinWindow = time.Minute

// trimJoinLog forgets the joins older than joinWindow; c.mu held.
func (c *class) trimJoinLog(now time.Time) {
	i := 0
	for i < len(c.joinLog) && now.Sub(c.joinLog[i]) > joinWindow {
		i++
	}
	c.joinLog = c.joinLog[i:]
}

// wasRemoved reports whether tok was the token of a removed learner.
func (c *class) wasRemoved(tok string) bool {
	if tok == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.removedTok {
		if constantEq(t, tok) {
			return true
		}
	}
	return false
}

// byTok returns the learner presenting tok, or nil.
func (c *class) byTok(tok string) *learner {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byToken[tok]
}

// remove takes learner id off the roster: its token stops working, its
// event streams end, and it returns the kernel sessions to stop.
func (c *class) remove(id string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.learners[id]
	if l == nil {
		return nil, fmt.Errorf("%w: no learner %q", errNotFound, id)
	}
	l.removed = true
	delete(c.learners, id)
	c.index.Delete(id)
	delete(c.byToken, l.token)
	c.removedTok = append(c.removedTok, l.token)
	if n := len(c.removedTok) - c.cfg.MaxLearners; n > 0 {
		c.removedTok = append(c.removedTok[:0:0], c.removedTok[n:]...)
	}
	for i, x := range c.order {
		if x == id {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	for ch := range l.events {
		close(ch)
	}
	l.events = nil
	sessions := append([]string(nil), l.detached...)
	for s := range l.sessions {
		sessions = append(sessions, s)
	}
	l.detached = nil
	c.dirty = true
	return sessions, nil
}

// session maps the session id a learner asks for to its own kernel
// session id and counts a websocket on it: ids of other learners are
// refused, any other id is put in the learner's namespace, and a learner
// has websockets on at most MaxSessions sessions at once. Each session
// it returns must be given back with release when its websocket closes.
func (c *class) session(l *learner, id string) (string, error) {
	if id == "" {
		id = kernel.NewID()
	}
	own := prefix(l.ID)
	if !strings.HasPrefix(id, own) {
		if learnerOfSession(id) != "" {
			return "", fmt.Errorf("%w: that session belongs to another learner", errForbidden)
		}
		id = own + id
	}
	if !kernel.ValidSessionID(id) {
		return "", kernel.ErrBadSessionID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.removed {
		return "", fmt.Errorf("%w: removed from the class", errForbidden)
	}
	if l.sessions[id] == 0 && len(l.sessions) >= c.cfg.MaxSessions {
		tabs := "tabs"
		if c.cfg.MaxSessions == 1 {
			tabs = "tab"
		}
		return "", fmt.Errorf("%w: you have %d %s open on this class, the limit; close one and this tab connects by itself",
			errTooMany, c.cfg.MaxSessions, tabs)
	}
	l.sessions[id]++
	for i, s := range l.detached {
		if s == id {
			l.detached = append(l.detached[:i], l.detached[i+1:]...)
			break
		}
	}
	return id, nil
}

// release gives back a websocket on session id of l. When it was the
// session's last, the session stops counting against MaxSessions and is
// kept detached; it returns the detached sessions past MaxSessions, oldest
// first, for the caller to shut down.
func (c *class) release(l *learner, id string) (stop []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.sessions[id] == 0 {
		return nil
	}
	l.sessions[id]--
	if l.sessions[id] > 0 {
		return nil
	}
	delete(l.sessions, id)
	if l.removed {
		return nil
	}
	l.detached = append(l.detached, id)
	if n := len(l.detached) - c.cfg.MaxSessions; n > 0 {
		stop = append(stop, l.detached[:n]...)
		l.detached = append(l.detached[:0:0], l.detached[n:]...)
	}
	return stop
}

var errTooMany = errors.New("too many")

// connected counts a learner's open websockets.
func (c *class) connected(l *learner, delta int) {
	c.mu.Lock()
	l.connections += delta
	c.dirty = true
	c.mu.Unlock()
}

// admit checks a learner's execute_request against the teacher's locks
// and the learner's limits, caps its timeout, and records it as pending.
// It returns the ename and text of a refusal, or "" to let it run.
func (c *class) admit(l *learner, m *kernel.Message) (ename, evalue string) {
	var er kernel.ExecuteRequest
	if err := m.DecodeContent(&er); err != nil {
		return "", "" // the kernel answers the malformed request
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if er.CellID != "" && c.locks[er.CellID] {
		return ErrLocked, "the teacher has locked this cell until they say run"
	}
	now := c.now()
	for id, p := range l.pending {
		if now.Sub(p.sent) > c.cfg.CellTimeout+time.Minute {
			delete(l.pending, id) // its reply was lost with its session
		}
	}
	l.inflightMu.Lock()
	for id, at := range l.inflight {
		if now.Sub(at) > c.cfg.CellTimeout+time.Minute {
			delete(l.inflight, id)
		}
	}
	_, dup := l.inflight[m.Header.MsgID]
	n := len(l.inflight)
	if !dup && n < c.cfg.MaxQueued {
		l.inflight[m.Header.MsgID] = now
	}
	l.inflightMu.Unlock()
	if dup {
		return kernel.ErrBadMessage, fmt.Sprintf("a cell with msg_id %q is already queued or running: every execute_request needs a msg_id of its own", m.Header.MsgID)
	}
	if n >= c.cfg.MaxQueued {
		return kernel.ErrQueueFull, fmt.Sprintf("you already have %d cells queued or running (the class limit); wait for one to finish", n)
	}
	timeout := c.cfg.CellTimeout
	if t, ok := er.Attrs["timeout"]; ok {
		if d, err := time.ParseDuration(t); err == nil && d > 0 && d < timeout {
			timeout = d
		}
	}
	attrs := make(map[string]string, len(er.Attrs)+1)
	for k, v := range er.Attrs {
		attrs[k] = v
	}
	attrs["timeout"] = timeout.String()
	if err := setMember(m, "attrs", attrs); err != nil {
		return kernel.ErrBadMessage, err.Error()
	}
	kind := er.Kind
	if kind == "" {
		kind = "sql"
	}
	l.pending[m.Header.MsgID] = pendingCell{kind: kind, cell: er.CellID, sent: now}
	c.dirty = true
	return "", ""
}

// setMember sets one member of a request's content and keeps the others
// as they came, members this package does not know included.
func setMember(m *kernel.Message, name string, v any) error {
	var raw []byte
	switch c := m.Content.(type) {
	case json.RawMessage:
		raw = c
	case nil:
		raw = []byte("{}")
	default:
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("%s content: %w", m.Header.MsgType, err)
		}
		raw = b
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return fmt.Errorf("%s content is not a JSON object", m.Header.MsgType)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s content: %w", m.Header.MsgType, err)
	}
	members[name] = b
	out, err := json.Marshal(members)
	if err != nil {
		return fmt.Errorf("%s content: %w", m.Header.MsgType, err)
	}
	m.Content = json.RawMessage(out)
	return nil
}

// run reads the tapped frames until stop, and sends the class view a
// fresh snapshot at most every 250 ms while something changed.
func (c *class) run() {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case f := <-c.frames:
			c.observe(f)
		case <-tick.C:
			c.mu.Lock()
			dirty := c.dirty && len(c.teachers) > 0
			c.dirty = c.dirty && !dirty
			c.mu.Unlock()
			if dirty {
				c.sendTeachers(c.snapshotJSON())
			}
		}
	}
}

// stop ends run and every event stream.
func (c *class) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	close(c.done)
	for ch := range c.teachers {
		close(ch)
	}
	c.teachers = map[chan []byte]bool{}
	for _, l := range c.learners {
		for ch := range l.events {
			close(ch)
		}
		l.events = map[chan []byte]bool{}
	}
}

// eventJSON encodes one event of a class event stream.
func eventJSON(typ string, v any) []byte {
	b, err := json.Marshal(map[string]any{"type": typ, "data": v})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "error", "data": err.Error()})
	}
	return b
}

// sendTeachers sends ev to every open class view, dropping it for one that
// lags (the next snapshot replaces it).
func (c *class) sendTeachers(ev []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.teachers {
		select {
		case ch <- ev:
		default:
		}
	}
}

// sendLearners sends ev to the event streams of learner l (nil: all).
func (c *class) sendLearners(l *learner, ev []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	send := func(l *learner) {
		for ch := range l.events {
			select {
			case ch <- ev:
			default:
			}
		}
	}
	if l != nil {
		send(l)
		return
	}
	for _, l := range c.learners {
		send(l)
	}
}

// subscribe opens an event stream for the teacher (l nil) or a learner.
// A learner has at most one stream per session it may open, the teacher
// maxTeacherStreams.
func (c *class) subscribe(l *learner) (chan []byte, error) {
	ch := make(chan []byte, 64)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped:
		return nil, fmt.Errorf("%w: the server is stopping", errUnavailable)
	case l != nil && l.removed:
		return nil, fmt.Errorf("%w: removed from the class", errForbidden)
	case l == nil && len(c.teachers) >= maxTeacherStreams:
		return nil, fmt.Errorf("%w: %d class views are open", errTooMany, len(c.teachers))
	case l != nil && len(l.events) >= c.cfg.MaxSessions:
		return nil, fmt.Errorf("%w: a learner may have %d class event streams open", errTooMany, c.cfg.MaxSessions)
	}
	if l == nil {
		c.teachers[ch] = true
	} else {
		l.events[ch] = true
	}
	return ch, nil
}

// maxTeacherStreams bounds the open class views.
const maxTeacherStreams = 16

// unsubscribe closes an event stream that is still open.
func (c *class) unsubscribe(l *learner, ch chan []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.teachers
	if l != nil {
		set = l.events
	}
	if set[ch] {
		delete(set, ch)
		close(ch)
	}
}

// setLock locks or unlocks a cell for every learner.
func (c *class) setLock(cell string, locked bool) {
	c.mu.Lock()
	if locked {
		c.locks[cell] = true
	} else {
		delete(c.locks, cell)
	}
	locks := c.lockList()
	c.dirty = true
	c.mu.Unlock()
	c.sendLearners(nil, eventJSON("locks", locks))
}

func (c *class) lockList() []string {
	l := make([]string, 0, len(c.locks))
	for k := range c.locks {
		l = append(l, k)
	}
	sort.Strings(l)
	return l
}

// state is what a learner's page needs on connecting: who it is, the
// locks and the latest push.
func (c *class) state(l *learner) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := map[string]any{"class": c.cfg.Name, "locks": c.lockList(), "push": c.push, "demo_session": DemoSession}
	if l != nil {
		v["role"], v["id"], v["name"] = "learner", l.ID, l.Name
	} else {
		v["role"] = "teacher"
	}
	return v
}

// learnerDir is the notebook folder of learner l.
func (c *class) learnerDir(l *learner) *NotebookDir {
	if c.root == "" {
		return nil
	}
	return &NotebookDir{Root: filepath.Join(c.root, ".class", l.ID)}
}
