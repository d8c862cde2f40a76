package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ManagerConfig configures a Manager. Zero fields take the defaults noted.
type ManagerConfig struct {
	// Executor is the template of every session's executor; its DB is
	// shared by all sessions.
	Executor Config
	// Scheduler is the shared admission queue (nil: one admitting
	// runtime.NumCPU()-1 heavy cells, at least 1).
	Scheduler *Scheduler
	// BufferMessages and BufferBytes bound each kernel's replay buffer
	// (10,000 messages, 16 MiB).
	BufferMessages int
	BufferBytes    int
	// TotalBufferBytes bounds the replay buffers of all kernels together
	// (256 MiB): over it, the oldest buffered frames of any kernel are
	// dropped first (a client that reconnects for them is told it missed
	// output).
	TotalBufferBytes int
	// SubscriberBuffer is the number of frames a slow subscriber may lag
	// behind before it is dropped (1,024).
	SubscriberBuffer int
	// OrphanTimeout: queued cells of a session without subscribers are
	// dropped after it (30 s).
	OrphanTimeout time.Duration
	// IdleTimeout: an idle session without subscribers is forgotten after
	// it (1 h).
	IdleTimeout time.Duration
	// MaxSessions bounds the number of live kernels (1,000). At the cap,
	// the least recently used kernel without clients, running or queued
	// cells is reclaimed for a new one; only when there is none is a new
	// session refused with ErrTooManySessions.
	MaxSessions int
	// MaxQueue bounds the cells queued in one session (100); more are
	// refused with a QueueFull error.
	MaxQueue int
	// AbortWindow is how long after an interrupt, or the error reply of
	// a stop_on_error cell, the execute requests that their client dated
	// before it (before the reply could reach it) are still aborted when
	// they arrive; what is queued is always aborted. It catches the rest
	// of a "Run all" still on its way. 0: no window.
	AbortWindow time.Duration
	// StopOnErrorWait is the shortest time between the arrival of an
	// execute request with stop_on_error and its error reply. Every
	// request that arrives before the reply is aborted (as ipykernel
	// aborts what is queued when a cell fails), so a cell that fails at
	// once still stops the rest of a "Run all" that is on its way, while
	// a request sent after its client saw the error runs. (Requests
	// dated before the reply, arriving later, are caught by AbortWindow.)
	// 0: no wait.
	StopOnErrorWait time.Duration
	// Logger receives the manager's logs (nil: slog.Default()).
	Logger *slog.Logger
	// OnCellDone, if set, is called after every executed or aborted cell
	// with its kind, reply status and run time (for metrics).
	OnCellDone func(kind, status string, run time.Duration)
	// OnBroadcast, if set, is called with every numbered frame a kernel
	// broadcasts, and the kernel's id, while the kernel's lock is held:
	// it must not block or call back into the kernel (classroom mode
	// copies the frames it needs and reads them later).
	OnBroadcast func(session string, frame []byte)
	// Configure, if set, may adjust the executor configuration of a new
	// kernel (a copy of Executor) by its session id: classroom mode
	// gives learners' sessions a smaller CellMemory.
	Configure func(session string, c *Config)
	// Shared, if set, lets the sessions share their measurement cells
	// (see SharedMeasurements); classroom mode sets it.
	Shared *SharedMeasurements
}

// Manager owns the kernels of a server, each named by the session id its
// clients chose. It is safe for concurrent
// use.
type Manager struct {
	cfg   ManagerConfig
	sched *Scheduler
	log   *slog.Logger
	wg    sync.WaitGroup

	// stamp orders buffered frames across kernels; buffered counts their
	// bytes; evict wakes the evictor, started once, stopped by Close.
	stamp     atomic.Int64
	buffered  atomic.Int64
	evict     chan struct{}
	evictOnce sync.Once
	done      chan struct{}

	mu       sync.Mutex
	closed   bool
	sessions map[string]*Kernel
}

// Errors of Manager.Attach.
var (
	ErrClosed          = errors.New("kernel: server is shutting down")
	ErrTooManySessions = errors.New("kernel: too many sessions")
	ErrBadSessionID    = errors.New("kernel: session id must be 1-64 characters from [A-Za-z0-9_-]")
	ErrUnknownRequest  = errors.New("kernel: unknown request type")
)

// NewManager returns a manager.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.BufferMessages <= 0 {
		cfg.BufferMessages = 10000
	}
	if cfg.BufferBytes <= 0 {
		cfg.BufferBytes = 16 << 20
	}
	if cfg.TotalBufferBytes <= 0 {
		cfg.TotalBufferBytes = 256 << 20
	}
	if cfg.SubscriberBuffer <= 0 {
		cfg.SubscriberBuffer = 1024
	}
	if cfg.OrphanTimeout <= 0 {
		cfg.OrphanTimeout = 30 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = time.Hour
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 1000
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Executor.Logger == nil {
		cfg.Executor.Logger = cfg.Logger
	}
	if cfg.Executor.Registry == nil {
		cfg.Executor.Registry = DefaultRegistry()
	}
	if db := cfg.Executor.DB; db != nil {
		RegisterKeys(db, cfg.Executor.Limits.CellMemory) // its sessions share the keys table
	}
	s := cfg.Scheduler
	if s == nil {
		s = NewScheduler(runtime.NumCPU() - 1)
	}
	return &Manager{cfg: cfg, sched: s, log: cfg.Logger, sessions: map[string]*Kernel{},
		evict: make(chan struct{}, 1), done: make(chan struct{})}, nil
}

// Scheduler returns the manager's admission queue.
func (m *Manager) Scheduler() *Scheduler { return m.sched }

// Registry returns the runner registry shared by the sessions.
func (m *Manager) Registry() *Registry { return m.cfg.Executor.Registry }

// Limits returns the per-cell limits (defaults filled in).
func (m *Manager) Limits() Limits { return m.cfg.Executor.Limits.withDefaults() }

// ManagerStats is a snapshot of a manager.
type ManagerStats struct {
	Sessions    int
	Subscribers int
	Queued      int // cells queued in sessions or waiting for admission
	Running     int // cells admitted and running
}

// Stats returns a snapshot of the sessions and the admission queue.
func (m *Manager) Stats() ManagerStats {
	m.mu.Lock()
	list := make([]*Kernel, 0, len(m.sessions))
	for _, s := range m.sessions {
		list = append(list, s)
	}
	m.mu.Unlock()
	st := ManagerStats{Sessions: len(list)}
	for _, s := range list {
		s.mu.Lock()
		st.Subscribers += len(s.subs)
		st.Queued += len(s.queue)
		s.mu.Unlock()
	}
	ss := m.sched.Stats()
	st.Queued += ss.Waiting
	st.Running = ss.Running
	return st
}

// ValidSessionID reports whether id may name a session.
func ValidSessionID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Attach subscribes to session id, creating it if needed (an empty id
// creates a session with a fresh id). The subscription's Welcome and Replay
// frames (the buffered messages after since) must be delivered before the
// frames read from C.
func (m *Manager) Attach(id string, since uint64) (*Subscription, error) {
	if id == "" {
		id = NewID()
	}
	if !ValidSessionID(id) {
		return nil, ErrBadSessionID
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	s := m.sessions[id]
	if s == nil {
		if len(m.sessions) >= m.cfg.MaxSessions {
			old := m.reclaimable()
			if old == nil {
				m.mu.Unlock()
				return nil, ErrTooManySessions
			}
			delete(m.sessions, old.id)
			old.log.Info("reclaiming an idle kernel without clients for a new session", "new", id)
			defer old.close(CloseSessionEnded)
		}
		var err error
		s, err = m.newKernel(id)
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		m.sessions[id] = s
	}
	m.mu.Unlock()
	return s.subscribe(since), nil
}

// reclaimable returns the least recently used kernel that has no
// subscribers and nothing running or queued, or nil; m.mu held.
func (m *Manager) reclaimable() *Kernel {
	var best *Kernel
	var bestAt time.Time
	for _, k := range m.sessions {
		k.mu.Lock()
		idle := !k.closed && len(k.subs) == 0 && k.running == nil && len(k.queue) == 0
		at := k.used
		k.mu.Unlock()
		if idle && (best == nil || at.Before(bestAt)) {
			best, bestAt = k, at
		}
	}
	return best
}

// evictSoon wakes the evictor, starting it the first time.
func (m *Manager) evictSoon() {
	m.evictOnce.Do(func() { go m.evictor() })
	select {
	case m.evict <- struct{}{}:
	default:
	}
}

// evictor drops buffered frames, oldest first across all kernels, while
// they hold more than TotalBufferBytes.
func (m *Manager) evictor() {
	for {
		select {
		case <-m.done:
			return
		case <-m.evict:
		}
		for m.buffered.Load() > int64(m.cfg.TotalBufferBytes) {
			if !m.evictOldest() {
				break
			}
		}
	}
}

// evictOldest drops the globally oldest frames: those of the kernel whose
// oldest frame is oldest, up to the next kernel's oldest. It reports
// whether it dropped anything.
func (m *Manager) evictOldest() bool {
	m.mu.Lock()
	list := make([]*Kernel, 0, len(m.sessions))
	for _, k := range m.sessions {
		list = append(list, k)
	}
	m.mu.Unlock()
	var oldest *Kernel
	first, second := int64(math.MaxInt64), int64(math.MaxInt64)
	for _, k := range list {
		k.mu.Lock()
		if len(k.buf) > 0 {
			if st := k.buf[0].stamp; st < first {
				oldest, first, second = k, st, first
			} else if st < second {
				second = st
			}
		}
		k.mu.Unlock()
	}
	if oldest == nil {
		return false
	}
	oldest.mu.Lock()
	defer oldest.mu.Unlock()
	n := 0
	over := m.buffered.Load() - int64(m.cfg.TotalBufferBytes)
	for n < len(oldest.buf) && over > 0 && (n == 0 || oldest.buf[n].stamp < second) {
		over -= int64(len(oldest.buf[n].data))
		n++
	}
	oldest.dropOldest(n)
	return n > 0
}

// Kernel returns the live kernel named id.
func (m *Manager) Kernel(id string) (*Kernel, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	return s, ok
}

// newKernel creates and starts a kernel; m.mu held.
func (m *Manager) newKernel(id string) (*Kernel, error) {
	xc := m.cfg.Executor
	xc.Session = ""
	if m.cfg.Configure != nil {
		m.cfg.Configure(id, &xc)
	}
	x, err := NewExecutor(xc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Kernel{
		id: id, m: m, x: x, log: m.log.With("session", id),
		ctx: ctx, cancel: cancel,
		subs: map[*Subscription]struct{}{}, used: time.Now(),
		wake: make(chan struct{}, 1),
	}
	m.wg.Add(1)
	go s.loop()
	s.log.Info("kernel created")
	return s, nil
}

// remove forgets s.
func (m *Manager) remove(s *Kernel) {
	m.mu.Lock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
	m.mu.Unlock()
}

// Close ends every session: running cells are cancelled, subscriptions
// closed with CloseServerShutdown. It waits until every session goroutine
// (and every runner, for up to a few seconds) has finished, or ctx is done.
// Closing again waits the same way.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	again := m.closed
	m.closed = true
	list := make([]*Kernel, 0, len(m.sessions))
	for _, s := range m.sessions {
		list = append(list, s)
	}
	m.sessions = map[string]*Kernel{}
	m.mu.Unlock()
	if !again {
		close(m.done)
	}
	for _, s := range list {
		s.close(CloseServerShutdown)
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kernel: closing sessions: %w", ctx.Err())
	}
}
