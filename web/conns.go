package web

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultUnauthIdleTimeout is how long a keep-alive connection that has
// carried no authenticated request may sit idle between requests.
const DefaultUnauthIdleTimeout = 15 * time.Second

// connTracker closes the keep-alive connections that have carried no
// authenticated request (the join page, its assets, wrong tokens) once
// they have been idle for timeout; connections of the teacher and of
// learners keep the server's IdleTimeout. Its clock is injected.
type connTracker struct {
	timeout time.Duration
	now     func() time.Time

	mu    sync.Mutex
	conns map[net.Conn]*connInfo
}

// connInfo is what the tracker knows of one connection.
type connInfo struct {
	authed    atomic.Bool
	idle      bool // guarded by connTracker.mu
	idleSince time.Time
}

type connInfoKey struct{}

func newConnTracker(timeout time.Duration, now func() time.Time) *connTracker {
	return &connTracker{timeout: timeout, now: now, conns: map[net.Conn]*connInfo{}}
}

// connContext is http.Server.ConnContext: it starts tracking c.
func (t *connTracker) connContext(ctx context.Context, c net.Conn) context.Context {
	ci := &connInfo{}
	t.mu.Lock()
	t.conns[c] = ci
	t.mu.Unlock()
	return context.WithValue(ctx, connInfoKey{}, ci)
}

// connState is http.Server.ConnState.
func (t *connTracker) connState(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ci := t.conns[c]
	if ci == nil {
		return
	}
	switch st {
	case http.StateIdle:
		ci.idle, ci.idleSince = true, t.now()
	case http.StateActive:
		ci.idle = false
	case http.StateHijacked, http.StateClosed:
		delete(t.conns, c)
	}
}

// sweep closes the unauthenticated connections idle for timeout or more
// and returns how many it closed.
func (t *connTracker) sweep() int {
	now := t.now()
	t.mu.Lock()
	var stale []net.Conn
	for c, ci := range t.conns {
		if ci.idle && !ci.authed.Load() && now.Sub(ci.idleSince) >= t.timeout {
			stale = append(stale, c)
			delete(t.conns, c)
		}
	}
	t.mu.Unlock()
	for _, c := range stale {
		_ = c.Close()
	}
	return len(stale)
}

// counts returns the tracked connections and the unauthenticated idle ones.
func (t *connTracker) counts() (all, unauthIdle int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ci := range t.conns {
		if ci.idle && !ci.authed.Load() {
			unauthIdle++
		}
	}
	return len(t.conns), unauthIdle
}

// run sweeps every quarter of the timeout until ctx is done.
func (t *connTracker) run(ctx context.Context) {
	tick := time.NewTicker(max(t.timeout/4, 250*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.sweep()
		}
	}
}

// markAuthed records that r's connection carried an authenticated
// request.
func markAuthed(r *http.Request) {
	if ci, ok := r.Context().Value(connInfoKey{}).(*connInfo); ok {
		ci.authed.Store(true)
	}
}
