package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"

	"cachebook/engine"
	"cachebook/engine/gen/gentest"
	"cachebook/kernel"
)

// runner adapts a function to kernel.Runner.
type runner struct {
	class kernel.Class
	run   func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error)
}

func (r runner) Class(kernel.Cell) kernel.Class { return r.class }
func (r runner) Run(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
	return r.run(ctx, c, env)
}

func textOut(s string) *kernel.Outcome {
	return &kernel.Outcome{Data: map[string]any{kernel.MIMEText: s}}
}

// testRunners: echo, and slow (progress every ms until cancelled, checking
// ctx between "batches" as the engine does).
func testRunners() *kernel.Registry {
	r := kernel.NewRegistry()
	r.Register("echo", runner{run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
		return textOut(c.Source), nil
	}})
	r.Register("slow", runner{run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
		for i := int64(0); ; i++ {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Millisecond):
			}
			env.Progress(i, 1<<40)
		}
	}})
	return r
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type testServer struct {
	*Server
	ts  *httptest.Server
	url string // ws://host/api/kernel
}

// hitsDB opens an engine on the shared generated hits table, as
// cmd/cachebook opens one for its kernels.
func hitsDB(t testing.TB) *engine.DB {
	t.Helper()
	db, err := engine.Open(engine.Options{DataDir: gentest.HitsDir(t)})
	if err != nil {
		t.Fatalf("engine.Open: %v", err)
	}
	return db
}

func newTestServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.Kernel.Executor.Registry == nil {
		cfg.Kernel.Executor.Registry = testRunners()
	}
	if cfg.Kernel.Scheduler == nil {
		cfg.Kernel.Scheduler = kernel.NewScheduler(2)
	}
	cfg.Loopback = true
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	if cfg.Token == "" && !cfg.NoToken {
		cfg.Token = "secret"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
		ts.Close()
	})
	return &testServer{Server: s, ts: ts, url: "ws" + strings.TrimPrefix(ts.URL, "http") + "/api/kernel"}
}

// client is a test websocket client.
type client struct {
	t       *testing.T
	conn    *websocket.Conn
	welcome kernel.Welcome
	frames  chan *kernel.Message
	errc    chan error
	// largest is the size of the largest frame received.
	largest atomic.Int64
}

func (ts *testServer) dial(t *testing.T, session string, since uint64) *client {
	t.Helper()
	q := url.Values{"token": {"secret"}}
	if session != "" {
		q.Set("session", session)
	}
	q.Set("since", fmt.Sprint(since))
	conn, resp, err := websocket.DefaultDialer.Dial(ts.url+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	c := &client{t: t, conn: conn, frames: make(chan *kernel.Message, 10000), errc: make(chan error, 1)}
	go func() {
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				c.errc <- err
				close(c.frames)
				return
			}
			if n := int64(len(data)); n > c.largest.Load() {
				c.largest.Store(n)
			}
			m, err := kernel.Decode(data, 0)
			if err != nil {
				c.errc <- fmt.Errorf("server frame: %w: %s", err, data)
				close(c.frames)
				return
			}
			c.frames <- m
		}
	}()
	w := c.next()
	if w.Header.MsgType != kernel.MsgWelcome {
		t.Fatalf("first frame %s", w.Header.MsgType)
	}
	_ = w.DecodeContent(&c.welcome)
	t.Cleanup(func() { conn.Close() })
	return c
}

// dialRaw connects and returns the welcome.
func (ts *testServer) dialRaw(t *testing.T) *kernel.Message {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(ts.url+"?token=secret", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer conn.Close()
	_, data, err := conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	m, err := kernel.Decode(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (c *client) next() *kernel.Message {
	c.t.Helper()
	select {
	case m, ok := <-c.frames:
		if !ok {
			c.t.Fatalf("connection ended: %v", <-c.errc)
		}
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatal("no frame in 30 s")
	}
	return nil
}

func (c *client) until(stop func(*kernel.Message) bool) []*kernel.Message {
	c.t.Helper()
	var out []*kernel.Message
	for {
		m := c.next()
		out = append(out, m)
		if stop(m) {
			return out
		}
	}
}

func (c *client) send(channel, msgType string, content any) kernel.Message {
	c.t.Helper()
	m := kernel.NewMessage(channel, msgType, "test-client", kernel.Header{}, content)
	data, err := kernel.Encode(&m)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.WriteMessage(websocket.TextMessage, data); err != nil {
		c.t.Fatal(err)
	}
	return m
}

func (c *client) execute(kind, code string) kernel.Message {
	return c.send(kernel.ChannelShell, kernel.MsgExecuteRequest, kernel.ExecuteRequest{Code: code, Kind: kind})
}

func replyTo(req kernel.Message, typ string) func(*kernel.Message) bool {
	return func(m *kernel.Message) bool {
		return m.Header.MsgType == typ && m.ParentHeader.MsgID == req.Header.MsgID
	}
}

func msgTypes(ms []*kernel.Message) []string {
	var t []string
	for _, m := range ms {
		t = append(t, m.Header.MsgType)
	}
	return t
}

func TestExecuteAndKernelInfo(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.dial(t, "", 0)
	if c.welcome.Protocol != kernel.Protocol || c.welcome.Session == "" {
		t.Fatalf("welcome %+v", c.welcome)
	}
	req := c.send(kernel.ChannelShell, kernel.MsgKernelInfoRequest, nil)
	info := c.until(replyTo(req, kernel.MsgKernelInfoReply))
	var ki kernel.KernelInfoReply
	_ = info[len(info)-1].DecodeContent(&ki)
	if ki.ProtocolVersion != kernel.Protocol || len(ki.CellKinds) != 2 || ki.Limits.MaxRows != 1000 || info[len(info)-1].Seq != 0 {
		t.Fatalf("kernel info %+v", ki)
	}
	ex := c.execute("echo", "hello")
	got := c.until(replyTo(ex, kernel.MsgExecuteReply))
	want := "status execute_input execute_result execute_reply"
	if strings.Join(msgTypes(got), " ") != want {
		t.Fatalf("frames %v, want %s", msgTypes(got), want)
	}
	var res kernel.ExecuteResult
	_ = got[2].DecodeContent(&res)
	if res.Data[kernel.MIMEText] != "hello" || got[2].Seq != 3 {
		t.Fatalf("result %+v seq %d", res, got[2].Seq)
	}
}

func TestStreamAndInterrupt(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.dial(t, "", 0)
	slow := c.execute("slow", "")
	queued := c.execute("echo", "never")
	frames := c.until(func(m *kernel.Message) bool { return m.Header.MsgType == kernel.MsgUpdateDisplayData })
	var d kernel.DisplayData
	_ = frames[len(frames)-1].DecodeContent(&d)
	if d.Transient == nil || d.Transient.DisplayID != "progress-"+strings.TrimPrefix(d.Transient.DisplayID, "progress-") || d.Data[kernel.MIMEProgress] == nil {
		t.Fatalf("update %+v", d)
	}
	// Several updates arrive, at most about 10 per second.
	t0 := time.Now()
	n := 0
	c.until(func(m *kernel.Message) bool {
		if m.Header.MsgType == kernel.MsgUpdateDisplayData {
			n++
		}
		return n == 3
	})
	if el := time.Since(t0); el < 250*time.Millisecond {
		t.Fatalf("3 updates in %v: rate limit not applied", el)
	}
	var latency time.Duration
	start := time.Now()
	c.send(kernel.ChannelControl, kernel.MsgInterruptRequest, nil)
	var aborted bool
	c.until(func(m *kernel.Message) bool {
		if m.Header.MsgType == kernel.MsgError && m.ParentHeader.MsgID == slow.Header.MsgID {
			latency = time.Since(start)
		}
		if replyTo(queued, kernel.MsgExecuteReply)(m) {
			var r kernel.ExecuteReply
			_ = m.DecodeContent(&r)
			aborted = r.Status == kernel.StatusAborted
		}
		return replyTo(slow, kernel.MsgExecuteReply)(m)
	})
	if latency == 0 || latency > 200*time.Millisecond || !aborted {
		t.Fatalf("interrupt: error after %v, queued cell aborted %v", latency, aborted)
	}
	t.Logf("interrupt latency over websocket: %v", latency)
}

func TestReconnectReplayAndTwoTabs(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.dial(t, "sess-1", 0)
	ex := c.execute("echo", "one")
	got := c.until(replyTo(ex, kernel.MsgExecuteReply))
	seen := got[1].Seq // the client saw up to execute_input, then dropped
	c.conn.Close()
	// Output produced while disconnected is buffered.
	other := ts.dial(t, "sess-1", 0)
	ex2 := other.execute("echo", "two")
	other.until(replyTo(ex2, kernel.MsgExecuteReply))

	c2 := ts.dial(t, "sess-1", seen)
	if c2.welcome.ReplayFrom != seen+1 || c2.welcome.Missed || c2.welcome.Session != "sess-1" {
		t.Fatalf("welcome %+v", c2.welcome)
	}
	replay := c2.until(replyTo(ex2, kernel.MsgExecuteReply))
	for i, m := range replay {
		if m.Seq != seen+1+uint64(i) {
			t.Fatalf("replayed seq %d at %d (from %d)", m.Seq, i, seen+1)
		}
	}
	// Both tabs see a new cell.
	ex3 := c2.execute("echo", "three")
	for _, cl := range []*client{c2, other} {
		cl.until(replyTo(ex3, kernel.MsgExecuteReply))
	}
}

func TestRefusedRequests(t *testing.T) {
	ts := newTestServer(t, Config{AllowOrigins: []string{"http://localhost:5173"}})
	host := strings.TrimPrefix(ts.ts.URL, "http://")
	wsHeaders := func(h http.Header) http.Header {
		h.Set("Connection", "Upgrade")
		h.Set("Upgrade", "websocket")
		h.Set("Sec-WebSocket-Version", "13")
		h.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		return h
	}
	tests := []struct {
		name   string
		path   string
		header http.Header
		host   string
		want   int
	}{
		{"no token", "/api/kernel", wsHeaders(http.Header{}), "", 401},
		{"wrong token", "/api/kernel?token=nope", wsHeaders(http.Header{}), "", 401},
		{"wrong header token", "/api/kernel", wsHeaders(http.Header{"Authorization": {"token nope"}}), "", 401},
		{"cross origin", "/api/kernel?token=secret", wsHeaders(http.Header{"Origin": {"http://evil.example"}}), "", 403},
		{"null origin", "/api/kernel?token=secret", wsHeaders(http.Header{"Origin": {"null"}}), "", 403},
		{"dns rebinding host", "/api/kernel?token=secret", wsHeaders(http.Header{}), "evil.example:8888", 403},
		{"bad session id", "/api/kernel?token=secret&session=../x", wsHeaders(http.Header{}), "", 400},
		{"bad since", "/api/kernel?token=secret&since=-1", wsHeaders(http.Header{}), "", 400},
		{"not a websocket", "/api/kernel?token=secret", http.Header{}, "", 400},
		{"allowed origin", "/api/kernel?token=secret", wsHeaders(http.Header{"Origin": {"http://localhost:5173"}}), "", 101},
		{"same origin, header token", "/api/kernel", wsHeaders(http.Header{"Origin": {"http://" + host}, "Authorization": {"token secret"}}), "", 101},
		{"cookie", "/api/kernel", wsHeaders(http.Header{"Cookie": {CookieName + "=secret"}}), "", 101},
		{"localhost host", "/api/kernel?token=secret", wsHeaders(http.Header{}), "localhost:1", 101},
		{"ipv6 loopback host", "/api/kernel?token=secret", wsHeaders(http.Header{}), "[::1]:1", 101},
		{"rest without token", "/api/lessons", http.Header{}, "", 401},
		{"metrics without token", "/metrics", http.Header{}, "", 401},
		{"page without token", "/", http.Header{}, "", 401},
		{"rest cross origin", "/api/status?token=secret", http.Header{"Origin": {"http://evil.example"}}, "", 403},
		{"rest ok", "/api/status?token=secret", http.Header{}, "", 200},
		{"page with token", "/?token=secret", http.Header{}, "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.ts.URL+tt.path, nil)
			req.Header = tt.header
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			t.Logf("%s -> %s", tt.name, resp.Status)
		})
	}
	// The server still works.
	c := ts.dial(t, "", 0)
	ex := c.execute("echo", "alive")
	c.until(replyTo(ex, kernel.MsgExecuteReply))
}

func TestBadFrames(t *testing.T) {
	ts := newTestServer(t, Config{MaxMessageBytes: 64 << 10})
	c := ts.dial(t, "s", 0)
	for _, frame := range []string{
		`not json`,
		`{"header":{"msg_type":"execute_request","version":"cachebook-kernel/9"}}`,
		`{"header":{"msg_type":"launch_missiles_request"}}`,
		`{"header":{"msg_type":"execute_request"},"content":{"code":42}}`,
		`{"content":{}}`,
	} {
		if err := c.conn.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		m := c.next()
		var pe kernel.ProtocolError
		_ = m.DecodeContent(&pe)
		if m.Header.MsgType != kernel.MsgProtocolError || m.Seq != 0 || pe.Ename != kernel.ErrBadMessage {
			t.Fatalf("%s -> %s %+v", frame, m.Header.MsgType, pe)
		}
		t.Logf("%-70s -> protocol_error %q", frame, pe.Evalue)
	}
	// Still usable.
	ex := c.execute("echo", "still here")
	c.until(replyTo(ex, kernel.MsgExecuteReply))

	// Oversized: close 1009. Binary: close 1003.
	for _, tc := range []struct {
		typ  int
		data []byte
		code int
	}{
		{websocket.TextMessage, []byte(`{"header":{"msg_type":"execute_request"},"content":{"code":"` + strings.Repeat("x", 100<<10) + `"}}`), websocket.CloseMessageTooBig},
		{websocket.BinaryMessage, []byte{1, 2, 3}, websocket.CloseUnsupportedData},
	} {
		c := ts.dial(t, "s", 1<<40)
		_ = c.conn.WriteMessage(tc.typ, tc.data)
		var err error
		for range c.frames {
		}
		err = <-c.errc
		c.conn.Close()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Fatalf("got %v, want close %d", err, tc.code)
		}
		t.Logf("frame type %d of %d bytes -> close %d %q", tc.typ, len(tc.data), ce.Code, ce.Text)
	}
	c2 := ts.dial(t, "s", 0)
	ex = c2.execute("echo", "server still up")
	c2.until(replyTo(ex, kernel.MsgExecuteReply))
}

func TestNoTokenNeedsLoopback(t *testing.T) {
	if _, err := New(Config{NoToken: true, Loopback: false, Logger: quiet()}); err == nil {
		t.Fatal("--no-token accepted on a non-loopback address")
	}
	for addr, want := range map[string]bool{"127.0.0.1:8888": true, "localhost:1": true, "[::1]:80": true, ":8888": false, "0.0.0.0:1": false, "10.0.0.1:1": false} {
		if IsLoopbackAddr(addr) != want {
			t.Errorf("IsLoopbackAddr(%q) != %v", addr, want)
		}
	}
	ts := newTestServer(t, Config{NoToken: true})
	resp, err := http.Get(ts.ts.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("no-token status %d", resp.StatusCode)
	}
}

// TestManySessions runs 100 concurrent sessions on loopback, each running
// small cells. It checks fairness (round-robin rounds), measures cell
// latency, and that no goroutine is left behind.
func TestManySessions(t *testing.T) {
	const sessions, cells = 100, 3
	const query = "SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3"
	gentest.HitsDir(t) // generate before counting goroutines
	before := runtime.NumGoroutine()
	// Registered first, so it runs after the server's own cleanup.
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines left behind (before: %d):\n%s", n-before, before, buf[:runtime.Stack(buf, true)])
		} else {
			t.Logf("goroutines settled: %d (before: %d)", n, before)
		}
	})
	func() {
		var mu sync.Mutex
		var order []string
		gate := make(chan struct{})
		var gateOnce sync.Once
		reg := testRunners()
		reg.Register("ordered", runner{run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
			if c.Source == "s0" {
				gateOnce.Do(func() { <-gate })
			}
			mu.Lock()
			order = append(order, c.Source)
			mu.Unlock()
			return textOut("ok"), nil
		}})
		reg.Register(kernel.KindSQL, kernel.NewSQLRunner())
		ts := newTestServer(t, Config{Kernel: kernel.ManagerConfig{
			Executor:  kernel.Config{Registry: reg, DB: hitsDB(t)},
			Scheduler: kernel.NewScheduler(1)}})
		clients := make([]*client, sessions)
		for i := range clients {
			clients[i] = ts.dial(t, fmt.Sprintf("s%d", i), 0)
		}
		// Fairness: s0's first cell holds the machine until every session
		// has queued its cells; then admission goes round-robin.
		var wg sync.WaitGroup
		for i, c := range clients {
			for k := 0; k < cells; k++ {
				c.execute("ordered", fmt.Sprintf("s%d", i))
			}
			if i == 0 {
				waitUntil(t, func() bool { return ts.Manager().Stats().Running == 1 })
			}
		}
		waitUntil(t, func() bool { return ts.Manager().Scheduler().Stats().Waiting == sessions-1 })
		close(gate)
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for m := range c.frames {
					if m.Header.MsgType == kernel.MsgExecuteReply {
						if n++; n == cells {
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		// Every session's k-th cell starts before any session's (k+2)-th.
		count := map[string]int{}
		maxRound := make([]int, cells) // last position of round k
		minRound := make([]int, cells)
		for k := range minRound {
			minRound[k] = len(order)
		}
		for pos, s := range order {
			k := count[s]
			count[s]++
			maxRound[k] = max(maxRound[k], pos)
			minRound[k] = min(minRound[k], pos)
		}
		for k := 0; k+2 < cells; k++ {
			if maxRound[k] > minRound[k+2] {
				t.Fatalf("unfair: round %d ends at %d after round %d starts at %d", k, maxRound[k], k+2, minRound[k+2])
			}
		}
		if len(order) != sessions*cells {
			t.Fatalf("%d cells ran, want %d", len(order), sessions*cells)
		}

		// Latency: every session sends its cells (real GROUP BY queries
		// over 20,000 rows) at once.
		lat := make(chan time.Duration, sessions*cells)
		t0 := time.Now()
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sent := map[string]time.Time{}
				for k := 0; k < cells; k++ {
					m := c.execute(kernel.KindSQL, query)
					sent[m.Header.MsgID] = time.Now()
				}
				n := 0
				for m := range c.frames {
					if m.Header.MsgType == kernel.MsgExecuteReply {
						var r kernel.ExecuteReply
						if err := m.DecodeContent(&r); err != nil || r.Status != kernel.StatusOK {
							t.Errorf("reply %+v %v", r, err)
						}
						lat <- time.Since(sent[m.ParentHeader.MsgID])
						if n++; n == cells {
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		total := time.Since(t0)
		close(lat)
		var ds []time.Duration
		for d := range lat {
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		if len(ds) != sessions*cells {
			t.Fatalf("%d answers, want %d", len(ds), sessions*cells)
		}
		t.Logf("%d sessions x %d cells (%s over 20k rows, 1 admitted at a time): p50 %v, p99 %v, max %v, all done in %v",
			sessions, cells, query, ds[len(ds)/2], ds[len(ds)*99/100], ds[len(ds)-1], total)
		for _, c := range clients {
			c.conn.Close()
		}
	}()
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGracefulShutdown(t *testing.T) {
	s, err := New(Config{Token: "secret", Loopback: true, Logger: quiet(),
		Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: testRunners()}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	if u := s.URL(ln.Addr()); !strings.HasSuffix(u, "/?token=secret") {
		t.Fatalf("URL %s", u)
	}
	ts := &testServer{Server: s, url: "ws://" + ln.Addr().String() + "/api/kernel"}
	c := ts.dial(t, "", 0)
	c.execute("slow", "")
	c.until(func(m *kernel.Message) bool { return m.Header.MsgType == kernel.MsgDisplayData })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	for range c.frames {
	}
	var ce *websocket.CloseError
	if err := <-c.errc; !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("client saw %v, want close 1001", err)
	}
}

func TestMetrics(t *testing.T) {
	ts := newTestServer(t, Config{})
	c := ts.dial(t, "", 0)
	ex := c.execute("echo", "x")
	c.until(replyTo(ex, kernel.MsgExecuteReply))
	// The reply goes out before the cell gives back its admission and is
	// counted; the idle status that follows comes after both.
	c.until(func(m *kernel.Message) bool {
		var st kernel.Status
		return replyTo(ex, kernel.MsgStatus)(m) && m.DecodeContent(&st) == nil && st.ExecutionState == kernel.StateIdle
	})
	req, _ := http.NewRequest("GET", ts.ts.URL+"/metrics", nil)
	req.Header.Set("Authorization", "token secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"cachebook_sessions 1", "cachebook_connections 1", "cachebook_queue_depth 0",
		"cachebook_cells_running 0", `cachebook_cell_duration_seconds_count{kind="echo",status="ok"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	gentest.Cleanup()
	os.Exit(code)
}

func TestLessonsAndNotebooks(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, Config{Lessons: BuiltinLessons(), Notebooks: &NotebookDir{Root: dir}})
	c := ts.dial(t, "", 0)
	call := func(typ string, content any) map[string]any {
		t.Helper()
		req := c.send(kernel.ChannelShell, typ, content)
		ms := c.until(func(m *kernel.Message) bool { return m.ParentHeader.MsgID == req.Header.MsgID })
		var v map[string]any
		_ = ms[len(ms)-1].DecodeContent(&v)
		if ms[len(ms)-1].Header.MsgType != strings.TrimSuffix(typ, "_request")+"_reply" {
			t.Fatalf("%s answered by %s", typ, ms[len(ms)-1].Header.MsgType)
		}
		return v
	}
	ls := call(kernel.MsgLessonListRequest, nil)
	lessons, _ := ls["lessons"].([]any)
	if ls["status"] != "ok" || len(lessons) == 0 {
		t.Fatalf("lessons %v", ls)
	}
	id := lessons[0].(map[string]any)["id"].(string)
	lo := call(kernel.MsgLessonOpenRequest, map[string]string{"id": id})
	nb, _ := lo["notebook"].(map[string]any)
	cells, _ := nb["cells"].([]any)
	if lo["status"] != "ok" || nb["title"] == "" || len(cells) < 2 {
		t.Fatalf("lesson %v", lo)
	}
	if first := cells[0].(map[string]any); first["cell_type"] != "markdown" || first["html"] == "" {
		t.Fatalf("first lesson cell %v", first)
	}
	if v := call(kernel.MsgLessonOpenRequest, map[string]string{"id": "nope"}); v["ename"] != "NotFound" {
		t.Fatalf("missing lesson %v", v)
	}

	doc := Doc{Title: "Mine", Cells: []DocCell{
		{CellType: "markdown", Source: "# Mine\n\nSome prose."},
		{CellType: "code", Kind: "sql", Source: "SELECT 1", Attrs: map[string]string{"timeout": "10s"}},
		{CellType: "code", Kind: "experiment", Source: "false-sharing\nthreads=2"},
	}}
	if v := call(kernel.MsgNotebookSaveRequest, map[string]any{"path": "mine/a.md", "notebook": doc}); v["status"] != "ok" {
		t.Fatalf("save %v", v)
	}
	if v := call(kernel.MsgNotebookListRequest, nil); fmt.Sprint(v["notebooks"]) == "[]" || !strings.Contains(fmt.Sprint(v), "mine/a.md") {
		t.Fatalf("list %v", v)
	}
	v := call(kernel.MsgNotebookOpenRequest, map[string]string{"path": "mine/a.md"})
	got, _ := v["notebook"].(map[string]any)
	gc, _ := got["cells"].([]any)
	if got["title"] != "Mine" || len(gc) != 3 || gc[2].(map[string]any)["source"] != "false-sharing\nthreads=2" ||
		fmt.Sprint(gc[1].(map[string]any)["attrs"]) != "map[timeout:10s]" {
		t.Fatalf("reopened %v", v)
	}
	for _, bad := range []string{"../x.md", "/abs.md", "a/b/c.md", "x.txt", ".hidden.md", ""} {
		if v := call(kernel.MsgNotebookSaveRequest, map[string]any{"path": bad, "notebook": doc}); v["ename"] != "BadRequest" {
			t.Errorf("save %q: %v", bad, v)
		}
	}
	if v := call(kernel.MsgNotebookOpenRequest, map[string]string{"path": "none.md"}); v["ename"] != "NotFound" {
		t.Fatalf("open missing %v", v)
	}
	if _, err := os.Stat(filepath.Join(dir, "mine", "a.md")); err != nil {
		t.Fatal(err)
	}

	// REST: same store, token and origin checks.
	do := func(method, path, origin, body string) int {
		req, _ := http.NewRequest(method, ts.ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "token secret")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path, origin, body string
		want                       int
	}{
		{"GET", "/api/notebooks", "", "", 200},
		{"GET", "/api/notebooks/mine/a.md", "", "", 200},
		{"GET", "/api/notebooks/mine/zzz.md", "", "", 404},
		{"PUT", "/api/notebooks/b.md", "", `{"title":"B","cells":[{"cell_type":"code","kind":"sql","source":"SELECT 2"}]}`, 200},
		{"PUT", "/api/notebooks/b.md", "http://evil.example", `{"cells":[]}`, 403},
		{"PUT", "/api/notebooks/b.md", "", `{"cells":[{"cell_type":"code","kind":"python"}]}`, 400},
		{"PUT", "/api/notebooks/b.md", "", `not json`, 400},
		{"GET", "/api/lessons/" + id, "", "", 200},
		{"POST", "/api/export?format=ipynb", "", `{"path":"b.md","title":"B","cells":[{"cell_type":"code","kind":"sql","source":"SELECT 2"}]}`, 200},
		{"POST", "/api/export?format=md", "", `{"title":"B","cells":[{"cell_type":"markdown","source":"# B"}]}`, 200},
		{"POST", "/api/export?format=pdf", "", `{"cells":[]}`, 400},
		{"POST", "/api/export?format=ipynb", "", `not json`, 400},
		{"POST", "/api/export?format=ipynb", "http://evil.example", `{"cells":[]}`, 403},
	} {
		if got := do(tc.method, tc.path, tc.origin, tc.body); got != tc.want {
			t.Errorf("%s %s (origin %q): %d, want %d", tc.method, tc.path, tc.origin, got, tc.want)
		}
	}
}

func TestExportIpynb(t *testing.T) {
	ts := newTestServer(t, Config{})
	req, _ := http.NewRequest("POST", ts.ts.URL+"/api/export?format=ipynb",
		strings.NewReader(`{"path":"dir/n.md","title":"N","cells":[{"cell_type":"markdown","source":"# N"},{"cell_type":"code","kind":"sql","source":"SELECT 1"}]}`))
	req.Header.Set("Authorization", "token secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var nb struct {
		NBFormat      int `json:"nbformat"`
		NBFormatMinor int `json:"nbformat_minor"`
		Cells         []struct {
			CellType string `json:"cell_type"`
			ID       string `json:"id"`
		} `json:"cells"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&nb); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || nb.NBFormat != 4 || nb.NBFormatMinor < 5 || len(nb.Cells) != 2 || nb.Cells[1].CellType != "code" || nb.Cells[1].ID == "" {
		t.Fatalf("status %d, notebook %+v", resp.StatusCode, nb)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `n.ipynb`) {
		t.Fatalf("Content-Disposition %q", cd)
	}
}

// TestInterruptRealSQL interrupts a real query over the websocket: many
// GROUP BY statements in one cell, stopped mid-way.
func TestInterruptRealSQL(t *testing.T) {
	reg := testRunners()
	reg.Register(kernel.KindSQL, kernel.NewSQLRunner())
	ts := newTestServer(t, Config{Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: reg, DB: hitsDB(t)}}})
	c := ts.dial(t, "", 0)
	src := strings.Repeat("SELECT UserID, SearchPhrase, count(*) FROM hits GROUP BY UserID, SearchPhrase ORDER BY 3 DESC LIMIT 3;\n", 5000)
	ex := c.execute(kernel.KindSQL, src)
	c.until(func(m *kernel.Message) bool { return m.Header.MsgType == kernel.MsgExecuteInput })
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	c.send(kernel.ChannelControl, kernel.MsgInterruptRequest, nil)
	var latency time.Duration
	var ec kernel.ErrorContent
	c.until(func(m *kernel.Message) bool {
		if m.Header.MsgType == kernel.MsgError && m.ParentHeader.MsgID == ex.Header.MsgID {
			latency = time.Since(start)
			_ = m.DecodeContent(&ec)
		}
		return replyTo(ex, kernel.MsgExecuteReply)(m)
	})
	if ec.Ename != kernel.ErrInterrupted || latency > interruptBound {
		t.Fatalf("error %s after %v", ec.Ename, latency)
	}
	t.Logf("real SQL interrupt latency over websocket: %v", latency)
	// The session runs the next query normally.
	ex = c.execute(kernel.KindSQL, "SELECT count(*) FROM hits")
	got := c.until(replyTo(ex, kernel.MsgExecuteReply))
	var r kernel.ExecuteReply
	_ = got[len(got)-1].DecodeContent(&r)
	if r.Status != kernel.StatusOK {
		t.Fatalf("next cell %+v", r)
	}
}

func TestWasmServedGzipped(t *testing.T) {
	wasm := bytes.Repeat([]byte("\x00asm cachebook "), 4096)
	ts := newTestServer(t, Config{Static: fstest.MapFS{"index.html": {Data: []byte("<html>")}, "dist/cachebook.wasm": {Data: wasm}}})
	for _, enc := range []string{"gzip, deflate", ""} {
		req, _ := http.NewRequest("GET", ts.ts.URL+"/dist/cachebook.wasm", nil)
		req.Header.Set("Accept-Encoding", enc) // set explicitly: no transparent decoding
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if enc != "" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Type") != "application/wasm" {
				t.Fatalf("gzip: err %v, headers %v", err, resp.Header)
			}
			body, _ = io.ReadAll(zr)
		}
		if resp.StatusCode != 200 || !bytes.Equal(body, wasm) {
			t.Fatalf("Accept-Encoding %q: status %d, %d bytes", enc, resp.StatusCode, len(body))
		}
	}
}

// TestNoConnAfterClose: once Close waits for the websocket connections, a
// connection that arrives meanwhile is refused instead of counted (adding
// to a WaitGroup being waited on is a race the detector reports).
func TestNoConnAfterClose(t *testing.T) {
	s := newTestServer(t, Config{})
	if !s.enterConn() {
		t.Fatal("a connection to an open server was refused")
	}
	s.connWG.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s.enterConn() {
		s.connWG.Done()
		t.Fatal("a connection to a closed server was counted")
	}
}
