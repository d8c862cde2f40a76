package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"cachebook/kernel"
)

// fakeClock is a clock tests step by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestLimiter(t *testing.T) {
	type step struct {
		advance time.Duration
		op      string // take, spend, wait
		key     string
		ok      bool          // take: got a token
		retry   time.Duration // take, wait: how long to wait
	}
	tests := []struct {
		name  string
		rate  Rate
		steps []step
	}{
		{"burst then refused, refills one per period", Rate{Burst: 2, Every: time.Second}, []step{
			{op: "take", ok: true},
			{op: "take", ok: true},
			{op: "take", ok: false, retry: time.Second},
			{advance: 400 * time.Millisecond, op: "take", ok: false, retry: 600 * time.Millisecond},
			{advance: 600 * time.Millisecond, op: "take", ok: true},
			{op: "take", ok: false, retry: time.Second},
			{advance: time.Hour, op: "take", ok: true},
			{op: "take", ok: true},
			{op: "take", ok: false, retry: time.Second},
		}},
		{"keys are separate", Rate{Burst: 1, Every: time.Minute}, []step{
			{op: "take", key: "10.0.0.1", ok: true},
			{op: "take", key: "10.0.0.1", ok: false, retry: time.Minute},
			{op: "take", key: "10.0.0.2", ok: true},
		}},
		{"spending goes into debt, wait says how long", Rate{Burst: 2, Every: time.Second}, []step{
			{op: "wait", retry: 0},
			{op: "spend"}, {op: "spend"}, {op: "spend"},
			{op: "wait", retry: 2 * time.Second},
			{advance: time.Second, op: "wait", retry: time.Second},
			{advance: time.Second, op: "wait", retry: 0},
		}},
		{"debt is bounded by the burst", Rate{Burst: 2, Every: time.Second}, []step{
			{op: "spend"}, {op: "spend"}, {op: "spend"}, {op: "spend"}, {op: "spend"}, {op: "spend"}, {op: "spend"},
			{op: "wait", retry: 3 * time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := newLimiter(tt.rate, clk.Now)
			for i, s := range tt.steps {
				clk.Add(s.advance)
				switch s.op {
				case "take":
					ok, retry := l.take(s.key)
					if ok != s.ok || retry.Round(time.Millisecond) != s.retry {
						t.Errorf("step %d take: (%v, %v), want (%v, %v)", i, ok, retry, s.ok, s.retry)
					}
				case "spend":
					l.spend(s.key)
				case "wait":
					if d := l.wait(s.key); d.Round(time.Millisecond) != s.retry {
						t.Errorf("step %d wait: %v, want %v", i, d, s.retry)
					}
				}
			}
		})
	}
}

func TestLimiterForgetsFullBuckets(t *testing.T) {
	clk := newFakeClock()
	l := newLimiter(Rate{Burst: 1, Every: time.Second}, clk.Now)
	for i := range maxBuckets {
		l.take(fmt.Sprint(i))
	}
	clk.Add(time.Second)
	l.take("one more")
	if n := len(l.buckets); n > 1 {
		t.Errorf("%d buckets kept after all refilled, want 1", n)
	}
}

func TestCleanName(t *testing.T) {
	tests := []struct {
		in, want string // want "" : refused
	}{
		{"Ada", "Ada"},
		{"  Ada   Lovelace \t", "Ada Lovelace"},
		{"Zoë", "Zoë"},
		{"Zoe\u0308", "Zoë"}, // NFC
		{"José Núñez", "José Núñez"},
		{"李雷", "李雷"},
		{"Ada\u202Eecalevol", "Adaecalevol"}, // right-to-left override
		{"\u2066Bob\u2069", "Bob"},           // isolates
		{"Bo\u200Bb", "Bob"},                 // zero-width space
		{"Bob\x00\x07\n", "Bob"},
		{"Bob\uFEFF", "Bob"},
		{"\ue000Eve", "Eve"}, // private use
		{"e\u0301\u0301\u0301\u0301\u0301\u0301x", "é\u0301\u0301\u0301x"},
		{strings.Repeat("x", 100), strings.Repeat("x", 40)},
		{strings.Repeat("é", 50), strings.Repeat("é", 40)},
		{"", ""},
		{"   ", ""},
		{"\u202E\u200B", ""},
		{"Teacher", ""},
		{"teacher", ""},
		{"TEACHER", ""},
		{"T e a c h e r", ""},
		{"T.e.a.c.h.e.r", ""},
		{"The teacher", ""},
		{"Teacher 2", ""},
		{"Τеасhеr", ""},              // Greek Tau, Cyrillic е а с һ
		{"ｔｅａｃｈｅｒ", ""},              // full-width
		{"𝐓𝐞𝐚𝐜𝐡𝐞𝐫", ""},              // mathematical bold
		{"7eacher", ""},              // a digit for a letter
		{"Teac\u200Bher", ""},        // zero-width inside
		{"Tea\u202Erehc", "Tearehc"}, // bidi removed first; not reserved
		{"Instructor", ""},
		{"admin", ""},
		{"Admiral Ada", "Admiral Ada"},
		{"Cheater", "Cheater"},
	}
	for _, tt := range tests {
		got, err := cleanName(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("cleanName(%q) = %q, want refused", tt.in, got)
		case tt.want == "" && !errors.Is(err, errBadRequest):
			t.Errorf("cleanName(%q): %v, want a bad request", tt.in, err)
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("cleanName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestClassJoinLimits: wrong codes are limited per address and then
// refuse the right code too until the bucket refills; successful joins
// are limited for the whole class, not per address; a full class says so
// on the class view.
func TestClassJoinLimits(t *testing.T) {
	clk := newFakeClock()
	c := newClass(ClassConfig{Name: "c", Code: "JOIN42", MaxLearners: 6, Now: clk.Now,
		WrongCodes: Rate{Burst: 3, Every: 10 * time.Second}, Joins: Rate{Burst: 2, Every: time.Second}}, "")
	const a, b = "10.0.0.1", "10.0.0.2"
	type step struct {
		advance    time.Duration
		addr, code string
		want       error // nil: joined
		retry      time.Duration
	}
	steps := []step{
		{addr: a, code: "WRONG1", want: errForbidden},
		{addr: a, code: "WRONG2", want: errForbidden},
		{addr: a, code: "WRONG3", want: errForbidden},
		{addr: a, code: "JOIN42", want: errTooMany, retry: 10 * time.Second}, // locked out, right code or not
		{addr: b, code: "join42", want: nil},                                 // another address is not
		{advance: 10 * time.Second, addr: a, code: "join42", want: nil},
		{addr: a, code: "JOIN42", want: nil},                            // two joins of the same address: no per-address cap
		{addr: a, code: "JOIN42", want: errTooMany, retry: time.Second}, // the class's join rate
		{advance: time.Second, addr: b, code: "JOIN42", want: nil},
		{advance: time.Second, addr: a, code: "JOIN42", want: nil},
		{advance: time.Second, addr: a, code: "JOIN42", want: nil},
		{advance: time.Second, addr: a, code: "JOIN42", want: errUnavailable}, // full: 6
	}
	for i, s := range steps {
		clk.Add(s.advance)
		l, err := c.join(s.addr, s.code, fmt.Sprintf("learner %d", i))
		if s.want == nil {
			if err != nil || l == nil {
				t.Fatalf("step %d (%s %s): %v, want joined", i, s.addr, s.code, err)
			}
			continue
		}
		if !errors.Is(err, s.want) {
			t.Fatalf("step %d (%s %s): %v, want %v", i, s.addr, s.code, err, s.want)
		}
		if d := retryAfter(err); d.Round(time.Millisecond) != s.retry {
			t.Errorf("step %d: retry after %v, want %v", i, d, s.retry)
		}
	}
	snap := c.snapshot()
	want := JoinStats{MaxLearners: 6, Full: true, LastMinute: 6, Latest: clk.Now().Add(-time.Second).Format(time.RFC3339),
		Refused: JoinRefusals{WrongCode: 4, Full: 1, Rate: 1}}
	if snap.Joins != want {
		t.Errorf("class view's joins:\n got %+v\nwant %+v", snap.Joins, want)
	}
	clk.Add(2 * time.Minute)
	if n := c.snapshot().Joins.LastMinute; n != 0 {
		t.Errorf("joins in the last minute, two minutes later: %d", n)
	}
}

// TestClassJoinHTTP: the HTTP replies of refused joins: 403 for a wrong
// code, then 429 with Retry-After; a reserved name is a 400.
func TestClassJoinHTTP(t *testing.T) {
	clk := newFakeClock()
	ts, _ := newClassServer(t, ClassConfig{Now: clk.Now, WrongCodes: Rate{Burst: 2, Every: 30 * time.Second}})
	post := func(code, name string) (int, string, string) {
		resp, err := http.Post(ts.ts.URL+"/api/class/join", "application/json",
			strings.NewReader(fmt.Sprintf(`{"code":%q,"name":%q}`, code, name)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	tests := []struct {
		code, name string
		status     int
		retry      string
	}{
		{"join42", "Teacher", http.StatusBadRequest, ""},
		{"nope", "Ada", http.StatusForbidden, ""},
		{"nope", "Ada", http.StatusForbidden, ""},
		{"nope", "Ada", http.StatusTooManyRequests, "30"},
		{"join42", "Ada", http.StatusTooManyRequests, "30"},
	}
	for i, tt := range tests {
		code, retry, body := post(tt.code, tt.name)
		if code != tt.status || retry != tt.retry {
			t.Errorf("join %d (%s, %s): %d Retry-After %q %s; want %d %q", i, tt.code, tt.name, code, retry, body, tt.status, tt.retry)
		}
	}
	clk.Add(30 * time.Second)
	if code, _, body := post("join42", "Ada\u202E"); code != 200 || !strings.Contains(body, `"name":"Ada"`) {
		t.Errorf("join after the wait: %d %s", code, body)
	}
}

// sendID sends an execute_request with the given msg_id.
func (c *client) sendID(id, kind, code, cell string) kernel.Message {
	c.t.Helper()
	m := kernel.NewMessage(kernel.ChannelShell, kernel.MsgExecuteRequest, "test-client", kernel.Header{},
		kernel.ExecuteRequest{Code: code, Kind: kind, CellID: cell})
	m.Header.MsgID = id
	data, err := kernel.Encode(&m)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.WriteMessage(websocket.TextMessage, data); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// TestClassQueueCountsCells: cells sent under one msg_id count as the
// cells they are: the copies are refused while the first is in flight.
func TestClassQueueCountsCells(t *testing.T) {
	ts, _ := newClassServer(t, ClassConfig{MaxQueued: 2})
	a := ts.join(t, "Ada")
	ac, _ := ts.dialAs(t, a.cookie(), "tab1")
	ac.sendID("same", "slow", "", "s0")
	var refused []string
	for i := 1; i < 10; i++ {
		ac.sendID("same", "slow", "", fmt.Sprintf("s%d", i))
	}
	for len(refused) < 9 {
		m := ac.next()
		if m.Header.MsgType == kernel.MsgExecuteReply && m.ParentHeader.MsgID == "same" {
			var r kernel.ExecuteReply
			_ = m.DecodeContent(&r)
			if r.Status != kernel.StatusError || r.Ename != kernel.ErrBadMessage {
				t.Fatalf("a copy of an in-flight msg_id: %+v", r)
			}
			refused = append(refused, r.CellID)
		}
	}
	// One cell in flight: one more fits, the third is over MaxQueued 2.
	second := ac.executeCell("slow", "", "t")
	third := ac.executeCell("echo", "x", "u")
	ms := ac.until(replyTo(third, kernel.MsgExecuteReply))
	var r kernel.ExecuteReply
	_ = ms[len(ms)-1].DecodeContent(&r)
	if r.Ename != kernel.ErrQueueFull {
		t.Errorf("a third cell with two in flight: %+v", r)
	}
	// Interrupt until both are answered (an interrupt may abort the
	// queued one with the running one, or not).
	answered := map[string]bool{}
	for !answered[second.Header.MsgID] || !answered["same"] {
		ac.send(kernel.ChannelControl, kernel.MsgInterruptRequest, map[string]any{})
		for {
			m := ac.next()
			if m.Header.MsgType == kernel.MsgExecuteReply {
				answered[m.ParentHeader.MsgID] = true
				break
			}
		}
	}
	// Once the first is answered its msg_id may be used again.
	again := ac.sendID("same", "echo", "again", "s0")
	ms = ac.until(replyTo(again, kernel.MsgExecuteReply))
	_ = ms[len(ms)-1].DecodeContent(&r)
	if r.Status != kernel.StatusOK {
		t.Errorf("msg_id reused after its reply: %+v", r)
	}
}

// dialClose dials as a learner and returns the close frame the server
// answers with, or 0 when the connection opened normally.
func (ts *testServer) dialClose(t *testing.T, cookie, session string) (int, string, *websocket.Conn) {
	t.Helper()
	h := http.Header{"Cookie": {cookie}}
	conn, _, err := websocket.DefaultDialer.Dial(ts.url+"?"+url.Values{"session": {session}}.Encode(), h)
	if err != nil {
		t.Fatalf("dial %s: %v", session, err)
	}
	_, _, err = conn.ReadMessage() // the welcome, or the close
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		conn.Close()
		return ce.Code, ce.Text, nil
	}
	if err != nil {
		t.Fatalf("read %s: %v", session, err)
	}
	t.Cleanup(func() { conn.Close() })
	return 0, "", conn
}

// TestClassSessionsFreedOnClose: a tab's session stops counting when its
// socket closes; over the limit the socket is closed with a code and a
// reason the page shows; detached sessions past the limit are shut down.
func TestClassSessionsFreedOnClose(t *testing.T) {
	ts, _ := newClassServer(t, ClassConfig{MaxSessions: 2})
	a := ts.join(t, "Ada")
	_, _, t1 := ts.dialClose(t, a.cookie(), "tab1")
	_, _, t2 := ts.dialClose(t, a.cookie(), "tab2")
	code, reason, _ := ts.dialClose(t, a.cookie(), "tab3")
	if code != CloseTooManySessions || !strings.Contains(reason, "2 tabs open") || len(reason) > 123 {
		t.Fatalf("a third tab with MaxSessions 2: close %d %q", code, reason)
	}
	// A second socket on an open session is the same tab (a reconnect).
	if code, _, _ := ts.dialClose(t, a.cookie(), "tab2"); code != 0 {
		t.Fatalf("a second socket on tab2: close %d", code)
	}
	t1.Close()
	waitFor(t, "tab1's slot freed", func() bool {
		code, _, c := ts.dialClose(t, a.cookie(), "tab3")
		if c != nil {
			c.Close()
		}
		return code == 0
	})
	// Tabs opened and closed one after another: at most MaxSessions
	// detached sessions are kept, older ones shut down.
	t2.Close()
	for i := range 6 {
		waitFor(t, "a slot", func() bool {
			code, _, c := ts.dialClose(t, a.cookie(), fmt.Sprintf("churn%d", i))
			if c != nil {
				c.Close()
			}
			return code == 0
		})
	}
	waitFor(t, "old detached sessions shut down", func() bool {
		n := 0
		for _, s := range []string{"tab1", "tab2", "tab3", "churn0", "churn1", "churn2", "churn3", "churn4", "churn5"} {
			if _, ok := ts.Manager().Kernel(prefix(a.ID) + s); ok {
				n++
			}
		}
		return n <= 2+2 // at most MaxSessions detached, plus sockets still closing
	})
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUnauthIdleConnsClosed: keep-alive connections that carried only
// unauthenticated requests are closed once idle for UnauthIdleTimeout;
// the teacher's and a learner's stay.
func TestUnauthIdleConnsClosed(t *testing.T) {
	clk := newFakeClock()
	s, err := New(Config{Token: "secret", Loopback: true, Logger: quiet(), Now: clk.Now,
		UnauthIdleTimeout: 15 * time.Second, Class: &ClassConfig{Name: "c", Code: "JOIN42"},
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
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	learner := joinOver(t, "http://"+ln.Addr().String())
	tests := []struct {
		name, req  string
		wantClosed bool
	}{
		{"join page", "GET /join HTTP/1.1\r\nHost: %s\r\n\r\n", true},
		{"asset", "GET /dist/app.css HTTP/1.1\r\nHost: %s\r\n\r\n", true},
		{"wrong token", "GET /api/status?token=wrong HTTP/1.1\r\nHost: %s\r\n\r\n", true},
		{"teacher", "GET /api/status HTTP/1.1\r\nHost: %s\r\nCookie: cachebook_token=secret\r\n\r\n", false},
		{"learner", "GET /api/class/me HTTP/1.1\r\nHost: %s\r\nCookie: " + learner + "\r\n\r\n", false},
	}
	const copies = 20
	conns := make([][]net.Conn, len(tests))
	for i, tt := range tests {
		for range copies {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, tt.req, ln.Addr().String())
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			conns[i] = append(conns[i], c)
		}
	}
	unauth := 3 * copies
	waitFor(t, "connections idle", func() bool { _, n := s.conns.counts(); return n == unauth })
	if n := s.conns.sweep(); n != 0 {
		t.Errorf("swept %d connections before the timeout", n)
	}
	clk.Add(15 * time.Second)
	if n := s.conns.sweep(); n != unauth {
		t.Errorf("swept %d connections after the timeout, want %d", n, unauth)
	}
	for i, tt := range tests {
		for _, c := range conns[i] {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, tt.req, ln.Addr().String())
			_, err := http.ReadResponse(bufio.NewReader(c), nil)
			if closed := err != nil; closed != tt.wantClosed {
				t.Errorf("%s: closed %v (%v), want %v", tt.name, closed, err, tt.wantClosed)
				break
			}
		}
	}
}

// joinOver joins the class at base (code JOIN42) and returns the
// learner's cookie.
func joinOver(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Post(base+"/api/class/join", "application/json", strings.NewReader(`{"code":"JOIN42","name":"Ada"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == LearnerCookieName {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("join: %d, no cookie", resp.StatusCode)
	return ""
}
