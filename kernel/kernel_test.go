package kernel

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func newTestManager(t *testing.T, cfg ManagerConfig) *Manager {
	t.Helper()
	cfg.Executor.Registry = testRegistry()
	cfg.Logger = quietLogger()
	if cfg.Scheduler == nil {
		cfg.Scheduler = NewScheduler(2)
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return m
}

func decodeFrame(t *testing.T, data []byte) *Message {
	t.Helper()
	m, err := Decode(data, 0)
	if err != nil {
		t.Fatalf("server frame does not decode: %v: %s", err, data)
	}
	return m
}

// readUntil reads live frames until stop returns true.
func readUntil(t *testing.T, sub *Subscription, stop func(*Message) bool) []*Message {
	t.Helper()
	var out []*Message
	timeout := time.After(5 * time.Second)
	for {
		select {
		case data, ok := <-sub.C:
			if !ok {
				t.Fatalf("subscription closed (%v) after %d frames", sub.Reason(), len(out))
			}
			m := decodeFrame(t, data)
			out = append(out, m)
			if stop(m) {
				return out
			}
		case <-timeout:
			t.Fatalf("timed out after %d frames", len(out))
		}
	}
}

func isType(typ string) func(*Message) bool {
	return func(m *Message) bool { return m.Header.MsgType == typ }
}

func idleAfter(n int) func(*Message) bool {
	seen := 0
	return func(m *Message) bool {
		if m.Header.MsgType == MsgExecuteReply {
			seen++
		}
		return seen >= n && m.Header.MsgType == MsgStatus && m.Content != nil && stateOf(m) == StateIdle
	}
}

func stateOf(m *Message) string {
	var st Status
	_ = m.DecodeContent(&st)
	return st.ExecutionState
}

func execReq(code, kind string) *Message {
	m := NewMessage(ChannelShell, MsgExecuteRequest, "client", Header{}, ExecuteRequest{Code: code, Kind: kind})
	return &m
}

func types(ms []*Message) []string {
	var t []string
	for _, m := range ms {
		t = append(t, m.Header.MsgType)
	}
	return t
}

func TestSessionExecuteAndReplay(t *testing.T) {
	m := newTestManager(t, ManagerConfig{})
	sub, err := m.Attach("s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var w Welcome
	_ = decodeFrame(t, sub.Welcome).DecodeContent(&w)
	if w.Session != "s1" || w.LastSeq != 0 || w.ReplayFrom != 1 || len(sub.Replay) != 0 {
		t.Fatalf("welcome %+v", w)
	}
	req := execReq("hello", "echo")
	if err := sub.Kernel().Handle(sub, req); err != nil {
		t.Fatal(err)
	}
	got := readUntil(t, sub, idleAfter(1))
	want := []string{MsgStatus, MsgExecuteInput, MsgExecuteResult, MsgExecuteReply, MsgStatus}
	if ts := types(got); len(ts) != len(want) {
		t.Fatalf("frames %v, want %v", ts, want)
	}
	for i, f := range got {
		if f.Header.MsgType != want[i] || f.Seq != uint64(i+1) || f.ParentHeader.MsgID != req.Header.MsgID {
			t.Fatalf("frame %d: %s seq %d parent %s", i, f.Header.MsgType, f.Seq, f.ParentHeader.MsgID)
		}
	}
	sub.Close()

	// A second tab and a reconnecting tab.
	sub2, _ := m.Attach("s1", 2)
	_ = decodeFrame(t, sub2.Welcome).DecodeContent(&w)
	if w.LastSeq != 5 || w.ReplayFrom != 3 || w.Missed || len(sub2.Replay) != 3 {
		t.Fatalf("welcome after reconnect %+v, %d replayed", w, len(sub2.Replay))
	}
	if f := decodeFrame(t, sub2.Replay[0]); f.Seq != 3 || f.Header.MsgType != MsgExecuteResult {
		t.Fatalf("first replayed %s seq %d", f.Header.MsgType, f.Seq)
	}
	sub3, _ := m.Attach("s1", 5)
	if len(sub3.Replay) != 0 {
		t.Fatal("replay for an up-to-date client")
	}
	// A client from another life of the session (since > last_seq) gets all.
	sub4, _ := m.Attach("s1", 99)
	_ = decodeFrame(t, sub4.Welcome).DecodeContent(&w)
	if !w.Missed || w.ReplayFrom != 1 || len(sub4.Replay) != 5 {
		t.Fatalf("stale client welcome %+v", w)
	}
	// Both live tabs see the next cell.
	_ = sub2.Kernel().Handle(sub2, execReq("again", "echo"))
	for _, s := range []*Subscription{sub2, sub3} {
		got := readUntil(t, s, idleAfter(1))
		if got[0].Seq != 6 {
			t.Fatalf("live frame seq %d", got[0].Seq)
		}
	}
}

func TestSessionInterruptClearsQueue(t *testing.T) {
	m := newTestManager(t, ManagerConfig{})
	sub, _ := m.Attach("s", 0)
	s := sub.Kernel()
	slow := execReq("", "slow")
	_ = s.Handle(sub, slow)
	_ = s.Handle(sub, execReq("a", "echo"))
	_ = s.Handle(sub, execReq("b", "echo"))
	readUntil(t, sub, isType(MsgDisplayData)) // the slow cell runs
	intr := NewMessage(ChannelControl, MsgInterruptRequest, "client", Header{}, nil)
	t0 := time.Now()
	_ = s.Handle(sub, &intr)
	var stopped time.Duration
	var aborted, errs int
	var ir InterruptReply
	readUntil(t, sub, func(f *Message) bool {
		switch f.Header.MsgType {
		case MsgInterruptReply:
			_ = f.DecodeContent(&ir)
		case MsgError:
			var ec ErrorContent
			_ = f.DecodeContent(&ec)
			if ec.Ename != ErrInterrupted || f.ParentHeader.MsgID != slow.Header.MsgID {
				t.Errorf("error %+v", ec)
			}
			stopped = time.Since(t0)
			errs++
		case MsgExecuteReply:
			var r ExecuteReply
			_ = f.DecodeContent(&r)
			if r.Status == StatusAborted {
				aborted++
			}
		}
		return f.Header.MsgType == MsgStatus && stateOf(f) == StateIdle
	})
	if !ir.Interrupted || ir.Dropped != 2 || aborted != 2 || errs != 1 {
		t.Fatalf("interrupt reply %+v, aborted %d, errors %d", ir, aborted, errs)
	}
	if stopped > 200*time.Millisecond {
		t.Fatalf("interrupt took %v", stopped)
	}
	t.Logf("interrupt latency (session): %v", stopped)
}

func TestSessionRestart(t *testing.T) {
	m := newTestManager(t, ManagerConfig{})
	sub, _ := m.Attach("s", 0)
	s := sub.Kernel()
	ks := s.KernelSession()
	_ = s.Handle(sub, execReq("x", "echo"))
	readUntil(t, sub, idleAfter(1))
	rq := NewMessage(ChannelControl, MsgShutdownRequest, "client", Header{}, ShutdownRequest{Restart: true})
	_ = s.Handle(sub, &rq)
	var sr ShutdownReply
	readUntil(t, sub, func(f *Message) bool {
		if f.Header.MsgType == MsgShutdownReply {
			_ = f.DecodeContent(&sr)
		}
		return f.Header.MsgType == MsgStatus && stateOf(f) == StateIdle
	})
	if !sr.Restart || sr.KernelSession == "" || sr.KernelSession == ks || s.KernelSession() != sr.KernelSession {
		t.Fatalf("shutdown reply %+v (old %s)", sr, ks)
	}
	_ = s.Handle(sub, execReq("y", "echo"))
	got := readUntil(t, sub, isType(MsgExecuteReply))
	var r ExecuteReply
	_ = got[len(got)-1].DecodeContent(&r)
	if r.ExecutionCount != 1 {
		t.Fatalf("execution count after restart %d", r.ExecutionCount)
	}
	// Shutdown without restart ends the session and its subscriptions.
	rq = NewMessage(ChannelControl, MsgShutdownRequest, "client", Header{}, ShutdownRequest{})
	_ = s.Handle(sub, &rq)
	for range sub.C {
	}
	if sub.Reason() != CloseSessionEnded {
		t.Fatalf("reason %v", sub.Reason())
	}
	if _, ok := m.Kernel("s"); ok {
		t.Fatal("session still listed")
	}
}

func TestSessionOrphanedQueueDropped(t *testing.T) {
	m := newTestManager(t, ManagerConfig{OrphanTimeout: 30 * time.Millisecond})
	sub, _ := m.Attach("s", 0)
	s := sub.Kernel()
	_ = s.Handle(sub, execReq("", "slow"))
	_ = s.Handle(sub, execReq("queued", "echo"))
	readUntil(t, sub, isType(MsgDisplayData))
	sub.Close()
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue) == 0
	})
	// The running cell goes on; the queued one was aborted, and a
	// reconnecting client sees that in the replay.
	sub2, _ := m.Attach("s", 0)
	found := false
	for _, data := range sub2.Replay {
		f := decodeFrame(t, data)
		var r ExecuteReply
		if f.Header.MsgType == MsgExecuteReply && f.DecodeContent(&r) == nil && r.Status == StatusAborted {
			found = true
		}
	}
	if !found {
		t.Fatal("no aborted reply for the orphaned cell")
	}
	if st := m.Stats(); st.Running != 1 || st.Sessions != 1 || st.Subscribers != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSessionSlowSubscriberDropped(t *testing.T) {
	m := newTestManager(t, ManagerConfig{SubscriberBuffer: 8})
	sub, _ := m.Attach("s", 0)
	fast, _ := m.Attach("s", 0)
	s := sub.Kernel()
	for i := 0; i < 3; i++ {
		_ = s.Handle(sub, execReq("x", "echo"))
		readUntil(t, fast, idleAfter(1))
	}
	for range sub.C {
	}
	if sub.Reason() != CloseSlow {
		t.Fatalf("reason %v", sub.Reason())
	}
}

func TestSessionFairAcrossSessions(t *testing.T) {
	m := newTestManager(t, ManagerConfig{Scheduler: NewScheduler(1)})
	gate := make(chan struct{})
	var order []string
	orderc := make(chan string, 100)
	m.Registry().Register("gated", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		<-gate
		orderc <- c.Source
		return nil, nil
	}})
	subs := map[string]*Subscription{}
	for _, id := range []string{"a", "b", "c"} {
		subs[id], _ = m.Attach(id, 0)
	}
	// a queues three cells, then b and c one each; a's first holds the machine.
	for i := 0; i < 3; i++ {
		_ = subs["a"].Kernel().Handle(subs["a"], execReq("a", "gated"))
	}
	waitFor(t, func() bool { return m.Stats().Running == 1 })
	_ = subs["b"].Kernel().Handle(subs["b"], execReq("b", "gated"))
	_ = subs["c"].Kernel().Handle(subs["c"], execReq("c", "gated"))
	waitFor(t, func() bool { return m.Scheduler().Stats().Waiting == 2 })
	close(gate)
	for i := 0; i < 5; i++ {
		order = append(order, <-orderc)
	}
	if got := order[1] + order[2]; order[0] != "a" || (got != "bc" && got != "cb") {
		t.Fatalf("order %v: a's second cell overtook b or c", order)
	}
}

func TestManagerCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	m, err := NewManager(ManagerConfig{Executor: Config{Registry: testRegistry()}, Scheduler: NewScheduler(1), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		sub, _ := m.Attach(id, 0)
		_ = sub.Kernel().Handle(sub, execReq("", "slow"))
		_ = sub.Kernel().Handle(sub, execReq("x", "echo"))
	}
	waitFor(t, func() bool { return m.Stats().Running == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Attach("e", 0); err != ErrClosed {
		t.Fatalf("attach after close: %v", err)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

func TestSessionQueueCap(t *testing.T) {
	m := newTestManager(t, ManagerConfig{MaxQueue: 2})
	sub, _ := m.Attach("s", 0)
	s := sub.Kernel()
	_ = s.Handle(sub, execReq("", "slow"))
	readUntil(t, sub, isType(MsgDisplayData)) // running, queue empty
	_ = s.Handle(sub, execReq("a", "echo"))
	_ = s.Handle(sub, execReq("b", "echo"))
	over := execReq("c", "echo")
	_ = s.Handle(sub, over)
	got := readUntil(t, sub, func(f *Message) bool {
		return f.Header.MsgType == MsgExecuteReply && f.ParentHeader.MsgID == over.Header.MsgID
	})
	var r ExecuteReply
	_ = got[len(got)-1].DecodeContent(&r)
	if r.Status != StatusError || r.Ename != ErrQueueFull {
		t.Fatalf("reply %+v", r)
	}
}

// TestSessionCapReclaimsIdle: at the cap a new session takes the place of
// the least recently used kernel nobody watches; kernels with clients are
// never reclaimed, and only then is a new session refused.
func TestSessionCapReclaimsIdle(t *testing.T) {
	m := newTestManager(t, ManagerConfig{MaxSessions: 2})
	a, _ := m.Attach("a", 0)
	b, _ := m.Attach("b", 0)
	a.Close() // a is idle without clients: reclaimable
	if _, err := m.Attach("c", 0); err != nil {
		t.Fatalf("a new learner at the cap: %v", err)
	}
	if _, ok := m.Kernel("a"); ok {
		t.Error("the idle kernel a was not reclaimed")
	}
	if _, ok := m.Kernel("b"); !ok {
		t.Error("kernel b, which has a client, was reclaimed")
	}
	if _, err := m.Attach("d", 0); !errors.Is(err, ErrTooManySessions) {
		t.Errorf("every kernel has a client: %v, want ErrTooManySessions", err)
	}
	b.Close()
}

// TestReplayBudget: the replay buffers of all kernels together stay within
// TotalBufferBytes, dropping the oldest frames first, whichever kernel
// holds them.
func TestReplayBudget(t *testing.T) {
	const budget = 40 << 10 // about two kernels' worth
	m := newTestManager(t, ManagerConfig{TotalBufferBytes: budget})
	big := strings.Repeat("x", 2<<10)
	var subs []*Subscription
	for i := range 4 {
		sub, err := m.Attach(fmt.Sprintf("k%d", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
		for range 4 {
			_ = sub.Kernel().Handle(sub, execReq(big, "echo"))
			readUntil(t, sub, idleAfter(1))
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for m.buffered.Load() > budget && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := m.buffered.Load(); n > budget {
		t.Fatalf("%d bytes buffered, budget %d", n, budget)
	}
	// The oldest kernel lost its frames first; the newest kept its own.
	first, _ := m.Attach("k0", 0)
	last, _ := m.Attach("k3", 0)
	var w Welcome
	_ = decodeFrame(t, first.Welcome).DecodeContent(&w)
	if !w.Missed {
		t.Errorf("k0 kept its oldest frames: %+v", w)
	}
	_ = decodeFrame(t, last.Welcome).DecodeContent(&w)
	if w.Missed || uint64(len(last.Replay)) != w.LastSeq {
		t.Errorf("k3 lost frames although older ones existed: %+v, %d replayed", w, len(last.Replay))
	}
	for _, s := range subs {
		s.Close()
	}
}
