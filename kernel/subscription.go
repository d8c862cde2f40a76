package kernel

import "time"

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

// Subscription is one subscriber (a browser tab) of a kernel.
type Subscription struct {
	s *Kernel
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

// Kernel returns the subscribed kernel.
func (sub *Subscription) Kernel() *Kernel { return sub.s }

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
	s.used = time.Now()
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

type entry struct {
	seq   uint64
	data  []byte
	stamp int64 // manager-wide order of buffering, for oldest-first eviction
}

// dropOldest drops the n oldest buffered frames; s.mu held.
func (s *Kernel) dropOldest(n int) {
	if n <= 0 {
		return
	}
	freed := 0
	for _, e := range s.buf[:n] {
		freed += len(e.data)
	}
	s.bufBytes -= freed
	s.m.buffered.Add(-int64(freed))
	s.buf = append(s.buf[:0:0], s.buf[n:]...)
}

func (s *Kernel) subscribe(since uint64) *Subscription {
	c := make(chan []byte, s.m.cfg.SubscriberBuffer)
	sub := &Subscription{s: s, c: c, C: c}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		sub.closed, sub.reason = true, CloseServerShutdown
		close(c)
		return sub
	}
	s.used = time.Now()
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
	oldest := s.seq + 1 // the oldest frame still buffered
	if len(s.buf) > 0 {
		oldest = s.buf[0].seq
	}
	if from < oldest {
		if from <= s.seq {
			w.Missed = true
		}
		from = oldest
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
func (s *Kernel) deliver(sub *Subscription, data []byte) bool {
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
func (s *Kernel) closeSub(sub *Subscription, r CloseReason) {
	delete(s.subs, sub)
	if !sub.closed {
		sub.closed, sub.reason = true, r
		close(sub.c)
	}
}

// broadcast numbers m, buffers it and sends it to every subscriber; s.mu
// held.
func (s *Kernel) broadcast(m Message) {
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
	s.buf = append(s.buf, entry{seq: s.seq, data: data, stamp: s.m.stamp.Add(1)})
	s.bufBytes += len(data)
	s.m.buffered.Add(int64(len(data)))
	drop := 0
	for len(s.buf)-drop > 1 && (len(s.buf)-drop > s.m.cfg.BufferMessages || s.bufBytes > s.m.cfg.BufferBytes) {
		drop++
	}
	s.dropOldest(drop)
	if s.m.buffered.Load() > int64(s.m.cfg.TotalBufferBytes) {
		s.m.evictSoon()
	}
	if s.m.cfg.OnBroadcast != nil {
		s.m.cfg.OnBroadcast(s.id, data)
	}
	for sub := range s.subs {
		s.deliver(sub, data)
	}
}

// Broadcast numbers m and sends it to every subscriber of the session.
func (s *Kernel) Broadcast(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.broadcast(m)
	}
}
