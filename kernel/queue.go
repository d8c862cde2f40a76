package kernel

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Kernel is a server-owned kernel: an Executor, a queue of cells (this
// file), numbered outputs with a replay buffer and its subscribers
// (subscription.go). Clients name it with the protocol's session id.
//
// Cells pass one serialisation point: the queue, drained one at a time by
// loop. Interrupt has one path: interrupt cancels the running cell's
// context (runCancel), which Executor.execute turns into the cell's
// context; the runner then has Limits.InterruptGrace to return (see
// there) before the reply says Interrupted regardless.
type Kernel struct {
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
	used      time.Time // last subscribe, unsubscribe or cell end, for reclaiming
	// The abort window (see ManagerConfig.AbortWindow) opened by the
	// last dated interrupt or stop-on-error reply: execute requests that
	// arrive before stopUntil and that their client dated before stopSent
	// are aborted.
	stopUntil, stopSent time.Time
}

type job struct {
	req       Header
	channel   string
	cell      Cell
	silent    bool
	noHistory bool // store_history false: the cell is not counted
	// stopOnError: if the cell fails, abort what is queued behind it.
	stopOnError bool
	enq         time.Time // when the request arrived
	restart     bool
	// interrupted: an interrupt came while it was queued (and was sent
	// after it); set and aborted by interrupt.
	interrupted bool
}

// ID returns the kernel's name (the protocol's session id).
func (s *Kernel) ID() string { return s.id }

// KernelSession returns the current kernel session id.
func (s *Kernel) KernelSession() string { return s.x.KernelSession() }

// orphanSince arms the orphan and idle timers; s.mu held.
func (s *Kernel) orphanSince() {
	s.orphan = time.AfterFunc(s.m.cfg.OrphanTimeout, s.dropOrphaned)
	s.idle = time.AfterFunc(s.m.cfg.IdleTimeout, s.reap)
}

// dropOrphaned drops the queued cells of a session nobody watches.
func (s *Kernel) dropOrphaned() {
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
func (s *Kernel) reap() {
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
func (s *Kernel) abortQueued(why string) int {
	n := 0
	var keep []*job
	for _, j := range s.queue {
		if j.restart {
			keep = append(keep, j)
			continue
		}
		n++
		s.abortJob(j, why)
	}
	s.queue = keep
	return n
}

// abortInterrupted aborts the queued cells an interrupt marked; s.mu
// held.
func (s *Kernel) abortInterrupted() {
	keep := s.queue[:0]
	for _, j := range s.queue {
		if j.interrupted {
			s.abortJob(j, "interrupted before it started")
			continue
		}
		keep = append(keep, j)
	}
	clear(s.queue[len(keep):])
	s.queue = keep
}

// abortJob answers j with an aborted reply without running it; s.mu held.
func (s *Kernel) abortJob(j *job, why string) {
	s.broadcast(NewMessage(j.channel, MsgExecuteReply, s.x.KernelSession(), j.req,
		ExecuteReply{Status: StatusAborted, CellID: j.cell.ID, Evalue: why}))
	if s.m.cfg.OnCellDone != nil {
		s.m.cfg.OnCellDone(kindOf(j.cell), StatusAborted, 0)
	}
}

// clientDate returns the date a client put in a request's header.
func clientDate(h Header) (time.Time, bool) {
	if h.Date == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, h.Date)
	return t, err == nil
}

// openAbortWindow starts an abort window at now, for requests dated
// before sent; s.mu held. Without an AbortWindow it does
// nothing.
func (s *Kernel) openAbortWindow(now, sent time.Time) {
	if s.m.cfg.AbortWindow <= 0 {
		return
	}
	s.stopUntil, s.stopSent = now.Add(s.m.cfg.AbortWindow), sent
}

// inAbortWindow reports whether the execute request j, just arrived, is
// aborted by the open abort window: it came within the window, and its
// client dated it before the interrupt or error reply (or not at all);
// s.mu held.
func (s *Kernel) inAbortWindow(j *job) bool {
	if s.stopUntil.IsZero() || j.enq.After(s.stopUntil) {
		return false
	}
	sent, ok := clientDate(j.req)
	return !ok || sent.Before(s.stopSent)
}

// Handle processes a kernel request from sub: kernel_info, execute,
// interrupt and shutdown. Other types return ErrUnknownRequest.
func (s *Kernel) Handle(sub *Subscription, req *Message) error {
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

func (s *Kernel) kernelInfo(req *Message) Message {
	s.mu.Lock()
	state := StateIdle
	if s.running != nil {
		state = StateBusy
	}
	s.mu.Unlock()
	return NewMessage(replyChannel(req, ChannelShell), MsgKernelInfoReply, s.x.KernelSession(), req.Header, s.x.KernelInfo(state))
}

func (s *Kernel) enqueue(req *Message, er ExecuteRequest) {
	j := &job{req: req.Header, channel: replyChannel(req, ChannelShell),
		cell:   Cell{Kind: er.Kind, Source: er.Code, Attrs: er.Attrs, ID: er.CellID, Predict: er.Predict, Guess: er.Guess},
		silent: er.Silent, noHistory: er.StoreHistory != nil && !*er.StoreHistory,
		stopOnError: er.StopOnError != nil && *er.StopOnError, enq: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.inAbortWindow(j) {
		s.abortJob(j, "interrupted before it started")
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

func (s *Kernel) interrupt(req *Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Every queued cell is aborted, but one its client dated after the
	// interrupt (it may arrive first on another socket).
	d, dated := clientDate(req.Header)
	dropped := 0
	for _, j := range s.queue {
		if sent, ok := clientDate(j.req); !j.restart && !(dated && ok && !sent.Before(d)) {
			j.interrupted = true
			dropped++
		}
	}
	s.abortInterrupted()
	if dated {
		// Requests its client sent before the interrupt but that are
		// still on their way are aborted too.
		s.openAbortWindow(time.Now(), d)
	}
	interrupted := s.running != nil && !s.running.restart
	if s.runCancel != nil {
		s.runCancel()
	}
	s.broadcast(NewMessage(replyChannel(req, ChannelControl), MsgInterruptReply, s.x.KernelSession(), req.Header,
		InterruptReply{Status: StatusOK, Interrupted: interrupted, Dropped: dropped}))
	s.log.Info("interrupt", "interrupted", interrupted, "dropped", dropped)
}

func (s *Kernel) shutdown(req *Message, restart bool) {
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
func (s *Kernel) close(r CloseReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.cancel()
	s.dropOldest(len(s.buf)) // its replay memory goes back to the budget
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
func (s *Kernel) loop() {
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
		s.queue[0] = nil // the backing array would keep the job's cell alive
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
		s.used = time.Now()
		if len(s.queue) == 0 && !s.closed {
			s.broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req, Status{ExecutionState: StateIdle}))
		}
		s.mu.Unlock()
	}
}

func (s *Kernel) restart(j *job) {
	ks, err := s.x.Reset(s.ctx)
	if err != nil {
		s.Broadcast(NewMessage(j.channel, MsgShutdownReply, s.x.KernelSession(), j.req,
			map[string]any{"status": StatusError, "restart": true, "ename": ErrKernel, "evalue": err.Error()}))
		return
	}
	s.log.Info("kernel restarted", "kernel_session", ks)
	s.Broadcast(NewMessage(j.channel, MsgShutdownReply, ks, j.req, ShutdownReply{Status: StatusOK, Restart: true, KernelSession: ks}))
}

func (s *Kernel) run(ctx context.Context, j *job) {
	sh := s.m.cfg.Shared
	var key string
	var lead *sharedRun
	if sh != nil && !j.silent {
		key = sharedKey(j.cell, s.x.Limits())
		if key != "" {
			var answered bool
			if answered, lead = s.runShared(ctx, j, sh, key); answered {
				return
			}
		} else if j.cell.Attrs[AttrAgain] != "" {
			key = sharedKey(Cell{Kind: j.cell.Kind, Source: j.cell.Source, Attrs: withoutAgain(j.cell.Attrs)}, s.x.Limits())
			if key != "" {
				lead = sh.measureAgain(key)
			}
		}
	}
	var out *Outcome
	ok := false
	// A run this cell leads ends before its reply goes out, so that a cell
	// sent in answer to the reply finds its result; the deferred call ends
	// it on the paths that return before it ran.
	finished := false
	finishShared := func() {
		if lead != nil && !finished {
			finished = true
			sh.finish(key, lead, out, ok)
		}
	}
	defer finishShared()
	class := s.x.Class(j.cell)
	sched := s.m.sched
	release, admitted := sched.TryAcquire(s, class)
	if !admitted {
		st := sched.Stats()
		var wait int64
		if sh != nil && class == Exclusive {
			wait = int64(st.Waiting+1) * sh.Typical().Nanoseconds()
		}
		s.Broadcast(NewMessage(ChannelIOPub, MsgStatus, s.x.KernelSession(), j.req,
			Status{ExecutionState: StateQueued, QueuePosition: st.Waiting + 1, ExpectedWaitNs: wait}))
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
		if lead != nil {
			lead.relay(m)
		}
	}
	start := time.Now()
	reply, _ := s.x.execute(ctx, j.cell, execOpts{silent: j.silent, noHistory: j.noHistory, queued: queued}, emit)
	if reply.Status == StatusOK && reply.Outcome != nil {
		out, ok = reply.Outcome, true
	}
	finishShared()
	// Stop on error, as ipykernel: the cells queued when the error reply
	// goes out are aborted. (An interrupted cell's queue was dealt with
	// by the interrupt: what was sent after it runs.) The reply waits
	// until StopOnErrorWait after the request came, so that the rest of
	// a "Run all" still on its way is queued by then: nothing that
	// arrives before the reply can have been sent in answer to it.
	stop := reply.Status == StatusError && reply.Ename != ErrInterrupted && j.stopOnError && !j.silent
	if d := time.Until(j.enq.Add(s.m.cfg.StopOnErrorWait)); stop && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.ctx.Done():
		}
		t.Stop()
	}
	s.mu.Lock()
	if !s.closed {
		// Read before the reply goes out: a request its client sends on
		// seeing the reply is dated later, however long this goroutine
		// waits for the processor after broadcasting it.
		now := time.Now()
		s.broadcast(NewMessage(j.channel, MsgExecuteReply, s.x.KernelSession(), j.req, reply.ExecuteReply))
		if stop {
			s.abortQueued("a cell before it failed")
			if d, ok := clientDate(j.req); ok {
				// And what its client sent before this reply went out
				// (on the client's clock: the request's date plus the
				// time the kernel held it), arriving later.
				s.openAbortWindow(now, d.Add(now.Sub(j.enq)))
			}
		}
	}
	s.mu.Unlock()
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
