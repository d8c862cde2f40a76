package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"cachebook/engine"
)

// ManagerConfig configures a Manager. Zero fields take the defaults noted.
type ManagerConfig struct {
	// Executor is the template of every session's executor. When its DB
	// is nil and DataDir is set, NewManager opens the engine once for all
	// sessions.
	Executor Config
	// Scheduler is the shared admission queue (nil: one admitting
	// runtime.NumCPU()-1 heavy cells, at least 1).
	Scheduler *Scheduler
	// BufferMessages and BufferBytes bound each session's replay buffer
	// (10,000 messages, 16 MiB).
	BufferMessages int
	BufferBytes    int
	// SubscriberBuffer is the number of frames a slow subscriber may lag
	// behind before it is dropped (1,024).
	SubscriberBuffer int
	// OrphanTimeout: queued cells of a session without subscribers are
	// dropped after it (30 s).
	OrphanTimeout time.Duration
	// IdleTimeout: an idle session without subscribers is forgotten after
	// it (1 h).
	IdleTimeout time.Duration
	// MaxSessions bounds the number of live sessions (1,000).
	MaxSessions int
	// MaxQueue bounds the cells queued in one session (100); more are
	// refused with a QueueFull error.
	MaxQueue int
	// Logger receives the manager's logs (nil: slog.Default()).
	Logger *slog.Logger
	// OnCellDone, if set, is called after every executed or aborted cell
	// with its kind, reply status and run time (for metrics).
	OnCellDone func(kind, status string, run time.Duration)
}

// Manager owns the kernel sessions of a server. It is safe for concurrent
// use.
type Manager struct {
	cfg   ManagerConfig
	sched *Scheduler
	log   *slog.Logger
	wg    sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	sessions map[string]*Session
}

// Errors of Manager.Attach.
var (
	ErrClosed          = errors.New("kernel: server is shutting down")
	ErrTooManySessions = errors.New("kernel: too many sessions")
	ErrBadSessionID    = errors.New("kernel: session id must be 1-64 characters from [A-Za-z0-9_-]")
	ErrUnknownRequest  = errors.New("kernel: unknown request type")
)

// NewManager returns a manager. It opens the engine when
// cfg.Executor.DataDir is set and cfg.Executor.DB is nil.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.BufferMessages <= 0 {
		cfg.BufferMessages = 10000
	}
	if cfg.BufferBytes <= 0 {
		cfg.BufferBytes = 16 << 20
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
	if cfg.Executor.DB == nil && cfg.Executor.DataDir != "" {
		db, err := engine.Open(engine.Options{DataDir: cfg.Executor.DataDir, QueryMemory: cfg.Executor.QueryMemory, Cache: cfg.Executor.Cache})
		if err != nil {
			return nil, fmt.Errorf("kernel: open data dir %s: %w", cfg.Executor.DataDir, err)
		}
		cfg.Executor.DB = db
	}
	cfg.Executor.DataDir = "" // opened above; sessions share the DB
	s := cfg.Scheduler
	if s == nil {
		s = NewScheduler(runtime.NumCPU() - 1)
	}
	return &Manager{cfg: cfg, sched: s, log: cfg.Logger, sessions: map[string]*Session{}}, nil
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
	list := make([]*Session, 0, len(m.sessions))
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
			m.mu.Unlock()
			return nil, ErrTooManySessions
		}
		var err error
		s, err = m.newSession(id)
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		m.sessions[id] = s
	}
	m.mu.Unlock()
	return s.subscribe(since), nil
}

// Session returns the live session id.
func (m *Manager) Session(id string) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	return s, ok
}

// newSession creates and starts a session; m.mu held.
func (m *Manager) newSession(id string) (*Session, error) {
	xc := m.cfg.Executor
	xc.Session = ""
	x, err := NewExecutor(xc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		id: id, m: m, x: x, log: m.log.With("session", id),
		ctx: ctx, cancel: cancel,
		subs: map[*Subscription]struct{}{},
		wake: make(chan struct{}, 1),
	}
	m.wg.Add(1)
	go s.loop()
	s.log.Info("session created")
	return s, nil
}

// remove forgets s.
func (m *Manager) remove(s *Session) {
	m.mu.Lock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
	m.mu.Unlock()
}

// Close ends every session: running cells are cancelled, subscriptions
// closed with CloseServerShutdown. It waits until every session goroutine
// (and every runner, for up to a few seconds) has finished, or ctx is done.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	list := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		list = append(list, s)
	}
	m.sessions = map[string]*Session{}
	m.mu.Unlock()
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

// CloseReason says why a subscription's channel was closed.
type CloseReason int

// Close reasons.
const (
	CloseNone           CloseReason = iota
	CloseUnsubscribed               // the subscriber called Close
	CloseSlow                       // it fell too far behind
	CloseSessionEnded               // shutdown_request without restart
	CloseServerShutdown             // the server is stopping
)

func (r CloseReason) String() string {
	return [...]string{"open", "unsubscribed", "too slow", "session ended", "server shutdown"}[r]
}

// Subscription is one subscriber (a browser tab) of a session.
type Subscription struct {
	s *Session
	// Welcome is the encoded welcome frame, Replay the buffered frames the
	// subscriber missed; send them, in that order, before reading C.
	Welcome []byte
	Replay  [][]byte
	// C delivers live frames: broadcasts and direct replies. It is closed
	// when the subscription ends; Reason then says why.
	C <-chan []byte

	c      chan []byte
	closed bool
	reason CloseReason
}

// Session returns the subscribed session.
func (sub *Subscription) Session() *Session { return sub.s }

// Reason returns why C was closed (CloseNone while open).
func (sub *Subscription) Reason() CloseReason {
	sub.s.mu.Lock()
	defer sub.s.mu.Unlock()
	return sub.reason
}

// Close ends the subscription.
func (sub *Subscription) Close() {
	s := sub.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[sub]; !ok {
		return
	}
	s.closeSub(sub, CloseUnsubscribed)
	if len(s.subs) == 0 && !s.closed {
		s.orphanSince()
	}
}

// Send delivers m to this subscriber only, without a sequence number. It
// reports false when the subscription is closed or full.
func (sub *Subscription) Send(m Message) bool {
	data, err := Encode(&m)
	if err != nil {
		sub.s.log.Error("encode reply", "err", err)
		return false
	}
	s := sub.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deliver(sub, data)
}

// Session is a server-owned kernel session: an Executor, a queue of cells,
// numbered outputs with a replay buffer, and its subscribers.
type Session struct {
	id     string
	m      *Manager
	x      *Executor
	log    *slog.Logger
	ctx    context.Context // ends when the session closes
	cancel context.CancelFunc
	wake   chan struct{}

	mu        sync.Mutex
	closed    bool
	seq       uint64
	buf       []entry
	bufBytes  int
	subs      map[*Subscription]struct{}
	queue     []*job
	running   *job
	runCancel context.CancelFunc
	orphan    *time.Timer
	idle      *time.Timer
}

type entry struct {
	seq  uint64
	data []byte
}

type job struct {
	req     Header
	channel string
	cell    Cell
	silent  bool
	enq     time.Time
	restart bool
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// KernelSession returns the current kernel session id.
func (s *Session) KernelSession() string { return s.x.KernelSession() }

func (s *Session) subscribe(since uint64) *Subscription {
	c := make(chan []byte, s.m.cfg.SubscriberBuffer)
	sub := &Subscription{s: s, c: c, C: c}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		sub.closed, sub.reason = true, CloseServerShutdown
		close(c)
		return sub
	}
	if s.orphan != nil {
		s.orphan.Stop()
		s.orphan = nil
	}
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	w := Welcome{Protocol: Protocol, Session: s.id, KernelSession: s.x.KernelSession(),
		LastSeq: s.seq, ExecutionState: StateIdle, Queued: len(s.queue), ExecutionCount: s.x.ExecutionCount()}
	if s.running != nil {
		w.ExecutionState = StateBusy
	}
	if len(s.buf) > 0 {
		w.OldestSeq = s.buf[0].seq
	}
	from := since + 1
	if since > s.seq {
		// The client counted in another life of this session (the server
		// restarted): replay everything and say so.
		from, w.Missed = 1, true
	}
	if len(s.buf) > 0 && from < s.buf[0].seq {
		if from <= s.seq {
			w.Missed = true
		}
		from = s.buf[0].seq
	}
	if from > s.seq {
		from = s.seq + 1
	}
	w.ReplayFrom = from
	for _, e := range s.buf {
		if e.seq >= from {
			sub.Replay = append(sub.Replay, e.data)
		}
	}
	wm := NewMessage(ChannelIOPub, MsgWelcome, s.x.KernelSession(), Header{}, w)
	sub.Welcome, _ = Encode(&wm)
	s.subs[sub] = struct{}{}
	return sub
}

// deliver queues data for sub without blocking; a full subscriber is
// dropped. s.mu held.
func (s *Session) deliver(sub *Subscription, data []byte) bool {
	if sub.closed {
		return false
	}
	select {
	case sub.c <- data:
		return true
	default:
		s.log.Warn("subscriber too slow, dropping it", "buffer", cap(sub.c))
		s.closeSub(sub, CloseSlow)
		if len(s.subs) == 0 && !s.closed {
			s.orphanSince()
		}
		return false
	}
}

// closeSub ends sub; s.mu held.
func (s *Session) closeSub(sub *Subscription, r CloseReason) {
	delete(s.subs, sub)
	if !sub.closed {
		sub.closed, sub.reason = true, r
		close(sub.c)
	}
}

// orphanSince arms the orphan and idle timers; s.mu held.
func (s *Session) orphanSince() {
	s.orphan = time.AfterFunc(s.m.cfg.OrphanTimeout, s.dropOrphaned)
	s.idle = time.AfterFunc(s.m.cfg.IdleTimeout, s.reap)
}

// dropOrphaned drops the queued cells of a session nobody watches.
func (s *Session) dropOrphaned() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.subs) > 0 || len(s.queue) == 0 {
		return
	}
	s.log.Info("dropping queued cells of a session without clients", "cells", len(s.queue))
	s.abortQueued("every client of the session had gone")
	if s.running == nil {
		s.broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), Header{}, Status{ExecutionState: StateIdle}))
	}
}

// reap forgets an idle session nobody watches.
func (s *Session) reap() {
	s.mu.Lock()
	if s.closed || len(s.subs) > 0 {
		s.mu.Unlock()
		return
	}
	if s.running != nil || len(s.queue) > 0 {
		s.idle = time.AfterFunc(s.m.cfg.IdleTimeout, s.reap)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.log.Info("forgetting idle session")
	s.m.remove(s)
	s.close(CloseSessionEnded)
}

// abortQueued drops every queued cell with an aborted reply; s.mu held.
// It returns how many were dropped.
func (s *Session) abortQueued(why string) int {
	n := 0
	var keep []*job
	for _, j := range s.queue {
		if j.restart {
			keep = append(keep, j)
			continue
		}
		n++
		s.broadcast(NewMessage(ChannelShell, MsgExecuteReply, s.x.KernelSession(), j.req,
			ExecuteReply{Status: StatusAborted, CellID: j.cell.ID, Evalue: why}))
		if s.m.cfg.OnCellDone != nil {
			s.m.cfg.OnCellDone(kindOf(j.cell), StatusAborted, 0)
		}
	}
	s.queue = keep
	return n
}

// broadcast numbers m, buffers it and sends it to every subscriber; s.mu
// held.
func (s *Session) broadcast(m Message) {
	s.seq++
	m.Seq = s.seq
	data, err := Encode(&m)
	if err != nil {
		// A runner produced content that cannot be encoded: say so
		// rather than leaving a hole in the sequence.
		s.log.Error("encode output", "type", m.Header.MsgType, "err", err)
		em := NewMessage(ChannelIOPub, MsgError, m.Header.Session, m.ParentHeader,
			ErrorContent{Ename: ErrKernel, Evalue: err.Error(), Traceback: []string{err.Error()}})
		em.Seq = s.seq
		data, _ = Encode(&em)
	}
	s.buf = append(s.buf, entry{seq: s.seq, data: data})
	s.bufBytes += len(data)
	drop := 0
	for len(s.buf)-drop > 1 && (len(s.buf)-drop > s.m.cfg.BufferMessages || s.bufBytes > s.m.cfg.BufferBytes) {
		s.bufBytes -= len(s.buf[drop].data)
		drop++
	}
	if drop > 0 {
		s.buf = append(s.buf[:0:0], s.buf[drop:]...)
	}
	for sub := range s.subs {
		s.deliver(sub, data)
	}
}

// Broadcast numbers m and sends it to every subscriber of the session.
func (s *Session) Broadcast(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.broadcast(m)
	}
}

// Handle processes a kernel request from sub: kernel_info, execute,
// interrupt and shutdown. Other types return ErrUnknownRequest.
func (s *Session) Handle(sub *Subscription, req *Message) error {
	switch req.Header.MsgType {
	case MsgKernelInfoRequest:
		sub.Send(s.kernelInfo(req))
		return nil
	case MsgExecuteRequest:
		var er ExecuteRequest
		if err := req.DecodeContent(&er); err != nil {
			return err
		}
		s.enqueue(req, er)
		return nil
	case MsgInterruptRequest:
		s.interrupt(req)
		return nil
	case MsgShutdownRequest:
		var sr ShutdownRequest
		if err := req.DecodeContent(&sr); err != nil {
			return err
		}
		s.shutdown(req, sr.Restart)
		return nil
	}
	return fmt.Errorf("%w %q", ErrUnknownRequest, req.Header.MsgType)
}

func replyChannel(req *Message, def string) string {
	if req.Channel != "" {
		return req.Channel
	}
	return def
}

func (s *Session) kernelInfo(req *Message) Message {
	s.mu.Lock()
	state := StateIdle
	if s.running != nil {
		state = StateBusy
	}
	s.mu.Unlock()
	return NewMessage(replyChannel(req, ChannelShell), MsgKernelInfoReply, s.x.KernelSession(), req.Header, s.x.KernelInfo(state))
}

func (s *Session) enqueue(req *Message, er ExecuteRequest) {
	j := &job{req: req.Header, channel: replyChannel(req, ChannelShell),
		cell: Cell{Kind: er.Kind, Source: er.Code, Attrs: er.Attrs, ID: er.CellID}, silent: er.Silent, enq: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if len(s.queue) >= s.m.cfg.MaxQueue {
		evalue := fmt.Sprintf("this session already has %d cells queued; wait or interrupt", len(s.queue))
		s.broadcast(NewMessage(ChannelIOPub, MsgError, s.x.KernelSession(), j.req,
			ErrorContent{Ename: ErrQueueFull, Evalue: evalue, Traceback: []string{ErrQueueFull + ": " + evalue}, CellID: j.cell.ID}))
		s.broadcast(NewMessage(j.channel, MsgExecuteReply, s.x.KernelSession(), j.req,
			ExecuteReply{Status: StatusError, CellID: j.cell.ID, Ename: ErrQueueFull, Evalue: evalue}))
		return
	}
	s.queue = append(s.queue, j)
	if s.running != nil || len(s.queue) > 1 {
		s.broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req,
			Status{ExecutionState: StateQueued, QueuePosition: len(s.queue)}))
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Session) interrupt(req *Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := s.abortQueued("interrupted before it started")
	interrupted := s.running != nil && !s.running.restart
	if s.runCancel != nil {
		s.runCancel()
	}
	s.broadcast(NewMessage(replyChannel(req, ChannelControl), MsgInterruptReply, s.x.KernelSession(), req.Header,
		InterruptReply{Status: StatusOK, Interrupted: interrupted, Dropped: dropped}))
	s.log.Info("interrupt", "interrupted", interrupted, "dropped", dropped)
}

func (s *Session) shutdown(req *Message, restart bool) {
	s.mu.Lock()
	s.abortQueued("the kernel was shut down")
	if s.runCancel != nil {
		s.runCancel()
	}
	if restart {
		s.broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), req.Header, Status{ExecutionState: StateStarting}))
		s.queue = append(s.queue, &job{req: req.Header, channel: replyChannel(req, ChannelControl), restart: true, enq: time.Now()})
		select {
		case s.wake <- struct{}{}:
		default:
		}
		s.mu.Unlock()
		return
	}
	s.broadcast(NewMessage(replyChannel(req, ChannelControl), MsgShutdownReply, s.x.KernelSession(), req.Header,
		ShutdownReply{Status: StatusOK, Restart: false}))
	s.mu.Unlock()
	s.log.Info("session shut down by request")
	s.m.remove(s)
	s.close(CloseSessionEnded)
}

// close ends the session: cancels its cells and closes its subscriptions.
func (s *Session) close(r CloseReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.cancel()
	for sub := range s.subs {
		s.closeSub(sub, r)
	}
	if s.orphan != nil {
		s.orphan.Stop()
	}
	if s.idle != nil {
		s.idle.Stop()
	}
}

// loop runs the session's cells one at a time.
func (s *Session) loop() {
	defer s.m.wg.Done()
	defer func() {
		// Let a runner that overran its interrupt finish, so that no
		// goroutine outlives the manager.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.x.WaitIdle(ctx); err != nil {
			s.log.Warn("runner still busy at session end", "err", err)
		}
	}()
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.mu.Unlock()
			select {
			case <-s.wake:
			case <-s.ctx.Done():
			}
			s.mu.Lock()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		j := s.queue[0]
		s.queue = s.queue[1:]
		jctx, cancel := context.WithCancel(s.ctx)
		s.running, s.runCancel = j, cancel
		s.mu.Unlock()

		if j.restart {
			s.restart(j)
		} else {
			s.run(jctx, j)
		}
		cancel()

		s.mu.Lock()
		s.running, s.runCancel = nil, nil
		if len(s.queue) == 0 && !s.closed {
			s.broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req, Status{ExecutionState: StateIdle}))
		}
		s.mu.Unlock()
	}
}

func (s *Session) restart(j *job) {
	ks, err := s.x.Reset(s.ctx)
	if err != nil {
		s.Broadcast(NewMessage(j.channel, MsgShutdownReply, s.x.KernelSession(), j.req,
			map[string]any{"status": StatusError, "restart": true, "ename": ErrKernel, "evalue": err.Error()}))
		return
	}
	s.log.Info("kernel restarted", "kernel_session", ks)
	s.Broadcast(NewMessage(j.channel, MsgShutdownReply, ks, j.req, ShutdownReply{Status: StatusOK, Restart: true, KernelSession: ks}))
}

func (s *Session) run(ctx context.Context, j *job) {
	class := s.x.Class(j.cell)
	sched := s.m.sched
	release, ok := sched.TryAcquire(s, class)
	if !ok {
		st := sched.Stats()
		s.Broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req,
			Status{ExecutionState: StateQueued, QueuePosition: st.Waiting + 1}))
		var err error
		release, err = sched.Acquire(ctx, s, class)
		if err != nil {
			why := "interrupted before it started"
			if s.ctx.Err() != nil {
				why = "the session ended before the cell started"
			}
			s.Broadcast(NewMessage(j.channel, MsgExecuteReply, s.x.KernelSession(), j.req,
				ExecuteReply{Status: StatusAborted, CellID: j.cell.ID, Evalue: why}))
			if s.m.cfg.OnCellDone != nil {
				s.m.cfg.OnCellDone(kindOf(j.cell), StatusAborted, 0)
			}
			return
		}
	}
	queued := time.Since(j.enq)
	s.Broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req, Status{ExecutionState: StateBusy}))
	emit := func(m Message) {
		m.ParentHeader = j.req
		s.Broadcast(m)
	}
	start := time.Now()
	reply, _ := s.x.execute(ctx, j.cell, execOpts{silent: j.silent, queued: queued}, emit)
	s.Broadcast(NewMessage(j.channel, MsgExecuteReply, s.x.KernelSession(), j.req, reply.ExecuteReply))
	// An interrupted runner may still be unwinding: keep its admission
	// until it has, so the machine is not oversubscribed.
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	if err := s.x.WaitIdle(wctx); err != nil {
		s.log.Warn("runner did not stop after its cell ended", "kind", kindOf(j.cell), "err", err)
	}
	cancel()
	release()
	if s.m.cfg.OnCellDone != nil {
		s.m.cfg.OnCellDone(kindOf(j.cell), reply.Status, time.Since(start))
	}
	s.log.Debug("cell done", "kind", kindOf(j.cell), "status", reply.Status, "queued", queued, "run", time.Since(start))
}
