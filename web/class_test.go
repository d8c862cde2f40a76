package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"cachebook/kernel"
)

// KindTestPredict is a prediction cell for tests: it emits the
// prediction display of the predictions feature's contract (MIMEPrediction)
// with the guess and measurement written in its source ("guess=12
// measured=15").
const KindTestPredict = "testpredict"

// classRegistry is the kernel's own runners (latency among them) plus a
// fake prediction cell, a 20 ms heavy cell for the load phase and a cell
// that runs until it is stopped.
func classRegistry() *kernel.Registry {
	r := kernel.DefaultRegistry()
	r.Register("echo", runner{run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
		return textOut(c.Source), nil
	}})
	r.Register("slow", runner{run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
		<-ctx.Done() // until interrupted or out of time
		return nil, ctx.Err()
	}})
	r.Register("work", runner{run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		return textOut("done"), nil
	}})
	r.Register(KindTestPredict, runner{run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
		v := map[string]float64{}
		for _, f := range strings.Fields(c.Source) {
			k, x, _ := strings.Cut(f, "=")
			n, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return nil, fmt.Errorf("testpredict: %q: %w", f, err)
			}
			v[k] = n
		}
		g, m := v["guess"], v["measured"]
		choice := func(x float64) string {
			switch {
			case x < 5:
				return "L1"
			case x < 20:
				return "L2/L3"
			}
			return "DRAM"
		}
		env.Display(env.DisplayID("prediction"), map[string]any{
			MIMEPrediction: map[string]any{"cell": c.ID, "question": "latency of a 1 MiB working set?", "unit": "ns",
				"choices": []string{"L1", "L2/L3", "DRAM"}, "guess": g, "guess_choice": choice(g), "measured": m,
				"measured_choice": choice(m), "article": 10.0, "article_source": "test", "check": "ok"},
			kernel.MIMEText: fmt.Sprintf("guess %g ns, measured %g ns", g, m),
		})
		return textOut("predicted"), nil
	}})
	return r
}

const testLatencyCell = "min=4K max=64K ppo=1 reps=1 sample=1ms huge=false"

func newClassServer(t *testing.T, cc ClassConfig) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	if cc.Name == "" {
		cc.Name = "cache class"
	}
	if cc.Code == "" {
		cc.Code = "JOIN42"
	}
	ts := newTestServer(t, Config{Class: &cc, Notebooks: &NotebookDir{Root: dir}, Lessons: BuiltinLessons(),
		Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: classRegistry(), Limits: kernel.Limits{CellMemory: 64 << 20}}}})
	return ts, dir
}

// joined is a learner of a test class: its id and cookie.
type joined struct {
	ID, Name, Token string
}

func (j joined) cookie() string { return LearnerCookieName + "=" + j.Token }

func (ts *testServer) join(t *testing.T, name string) joined {
	t.Helper()
	resp, err := http.Post(ts.ts.URL+"/api/class/join", "application/json",
		strings.NewReader(fmt.Sprintf(`{"code":"join42","name":%q}`, name)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ ID, Name string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("join %s: %d %v", name, resp.StatusCode, err)
	}
	for _, c := range resp.Cookies() {
		if c.Name == LearnerCookieName {
			if !c.HttpOnly {
				t.Error("the learner cookie is not HttpOnly")
			}
			return joined{ID: v.ID, Name: v.Name, Token: c.Value}
		}
	}
	t.Fatal("join set no learner cookie")
	return joined{}
}

// dialAs opens a websocket with the given cookie ("" none, "teacher" the
// server's token) and returns the client or the HTTP status of the
// refused handshake.
func (ts *testServer) dialAs(t *testing.T, cookie, session string) (*client, int) {
	t.Helper()
	q := url.Values{"session": {session}}
	h := http.Header{}
	switch cookie {
	case "":
	case "teacher":
		h.Set("Cookie", CookieName+"=secret")
	default:
		h.Set("Cookie", cookie)
	}
	conn, resp, err := websocket.DefaultDialer.Dial(ts.url+"?"+q.Encode(), h)
	if err != nil {
		if resp != nil {
			return nil, resp.StatusCode
		}
		t.Fatalf("dial: %v", err)
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
			m, err := kernel.Decode(data, 0)
			if err != nil {
				c.errc <- err
				close(c.frames)
				return
			}
			c.frames <- m
		}
	}()
	w := c.next()
	_ = w.DecodeContent(&c.welcome)
	t.Cleanup(func() { conn.Close() })
	return c, http.StatusSwitchingProtocols
}

func (c *client) executeCell(kind, code, cellID string) kernel.Message {
	return c.send(kernel.ChannelShell, kernel.MsgExecuteRequest, kernel.ExecuteRequest{Code: code, Kind: kind, CellID: cellID})
}

// do sends a request with a cookie ("teacher": the token) and returns the
// status and body.
func (ts *testServer) do(t *testing.T, cookie, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, ts.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	switch cookie {
	case "":
	case "teacher":
		req.Header.Set("Cookie", CookieName+"=secret")
	default:
		req.Header.Set("Cookie", cookie)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// An event stream: its first event is enough.
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		b = []byte(line)
	} else {
		b, _ = io.ReadAll(resp.Body)
	}
	return resp.StatusCode, string(b)
}

func (ts *testServer) snapshot(t *testing.T) ClassSnapshot {
	t.Helper()
	code, body := ts.do(t, "teacher", "GET", "/api/class", "")
	if code != 200 {
		t.Fatalf("GET /api/class: %d %s", code, body)
	}
	var s ClassSnapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// events reads a learner's (or the teacher's) class event stream into a
// channel until the test ends.
func (ts *testServer) events(t *testing.T, cookie, path string) <-chan map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.ts.URL+path, nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", path, err, resp)
	}
	out := make(chan map[string]json.RawMessage, 1000)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev map[string]json.RawMessage
			if json.Unmarshal([]byte(line), &ev) == nil {
				out <- ev
			}
		}
	}()
	return out
}

func waitEvent(t *testing.T, ch <-chan map[string]json.RawMessage, typ string) json.RawMessage {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("event stream ended before a %s event", typ)
			}
			if string(ev["type"]) == strconv.Quote(typ) {
				return ev["data"]
			}
		case <-deadline:
			t.Fatalf("no %s event in 10 s", typ)
		}
	}
}

// runCell sends a cell and waits for its reply, returning the reply and
// the time from sending to the reply.
func runCell(c *client, kind, code, cellID string) (kernel.ExecuteReply, time.Duration) {
	start := time.Now()
	req := c.executeCell(kind, code, cellID)
	ms := c.until(replyTo(req, kernel.MsgExecuteReply))
	var r kernel.ExecuteReply
	_ = ms[len(ms)-1].DecodeContent(&r)
	return r, time.Since(start)
}

// TestClassThirtyLearners: thirty learners join, each runs a latency cell
// and a prediction cell, then all of them keep the server busy for a
// while; the class view ends up with thirty curves, thirty guesses and a
// fair share of cells per learner.
func TestClassThirtyLearners(t *testing.T) {
	const n = 30
	ts, _ := newClassServer(t, ClassConfig{MaxQueued: 2})
	teacherEvents := ts.events(t, CookieName+"=secret", "/api/class/events")
	waitEvent(t, teacherEvents, "snapshot")

	learners := make([]joined, n)
	clients := make([]*client, n)
	for i := range learners {
		learners[i] = ts.join(t, fmt.Sprintf("learner %02d", i+1))
		var code int
		clients[i], code = ts.dialAs(t, learners[i].cookie(), "tab1")
		if code != 101 {
			t.Fatalf("learner %d: websocket %d", i, code)
		}
		if want := prefix(learners[i].ID) + "tab1"; clients[i].welcome.Session != want {
			t.Fatalf("learner %d got session %q, want %q", i, clients[i].welcome.Session, want)
		}
	}

	var (
		mu   sync.Mutex
		lats []time.Duration
		fail []string
	)
	record := func(i int, what string, r kernel.ExecuteReply, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		lats = append(lats, d)
		if r.Status != kernel.StatusOK {
			fail = append(fail, fmt.Sprintf("learner %d %s: %s %s %s", i, what, r.Status, r.Ename, r.Evalue))
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := clients[i]
			r, d := runCell(c, kernel.KindLatency, testLatencyCell, "latency-curve")
			record(i, "latency", r, d)
			r, d = runCell(c, KindTestPredict, fmt.Sprintf("guess=%d measured=%d", 2+i, 8+i%3), "predict-l2")
			record(i, "prediction", r, d)
		}(i)
	}
	wg.Wait()
	if len(fail) > 0 {
		t.Fatalf("cells failed:\n%s", strings.Join(fail, "\n"))
	}
	first := append([]time.Duration(nil), lats...)
	sort.Slice(first, func(i, j int) bool { return first[i] < first[j] })
	t.Logf("30 learners × (latency cell + prediction cell) in %v: send-to-reply p50 %v p99 %v (the 30 latency cells run one at a time: measurements are exclusive)",
		time.Since(start).Round(time.Millisecond), first[len(first)/2].Round(time.Millisecond), first[len(first)*99/100].Round(time.Millisecond))
	lats = nil

	// Load: every learner keeps sending 20 ms cells for 3 s, two in
	// flight at most (the class limit): the admission queue's round-robin
	// must share the two slots fairly.
	counts := make([]int, n)
	stop := time.Now().Add(3 * time.Second)
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := clients[i]
			for time.Now().Before(stop) {
				r, d := runCell(c, "work", "", "")
				record(i, "work", r, d)
				counts[i]++
			}
		}(i)
	}
	wg.Wait()
	if len(fail) > 0 {
		t.Fatalf("cells failed:\n%s", strings.Join(fail, "\n"))
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	lo, hi := counts[0], counts[0]
	total := 0
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
		total += c
	}
	p50, p99 := lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*99/100)]
	t.Logf("load, 3 s: %d cells of 20 ms on %d admission slots; cells per learner min %d max %d (max/min %.2f); send-to-reply p50 %v p99 %v",
		total, ts.Manager().Scheduler().Limit(), lo, hi, float64(hi)/float64(max(lo, 1)), p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	if lo == 0 || float64(hi)/float64(lo) > 1.5 {
		t.Errorf("unfair: load cells per learner min %d max %d: %v", lo, hi, counts)
	}

	// The class view: thirty curves, a median, thirty guesses.
	var s ClassSnapshot
	deadline := time.Now().Add(10 * time.Second)
	for {
		s = ts.snapshot(t)
		curves, guesses := 0, 0
		for _, l := range s.Learners {
			if len(l.Curve) > 0 {
				curves++
			}
		}
		if len(s.Predictions) == 1 {
			guesses = len(s.Predictions[0].Guesses)
		}
		if curves == n && guesses == n || time.Now().After(deadline) {
			if curves != n || guesses != n {
				t.Fatalf("class view has %d curves and %d guesses, want %d each", curves, guesses, n)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(s.Learners) != n || len(s.Median) == 0 {
		t.Fatalf("roster %d, median %d points", len(s.Learners), len(s.Median))
	}
	if p := s.Predictions[0]; p.Cell != "predict-l2" || p.Unit != "ns" || len(p.Choices) != 3 {
		t.Errorf("prediction view %+v", p)
	}
	t.Logf("class view: %d learners, %d cells, server-side cell time p50 %.1f ms p99 %.1f ms, measurement waits %d, per learner %d..%d, dropped frames %d",
		len(s.Learners), s.Stats.Cells, s.Stats.P50Ms, s.Stats.P99Ms, s.Stats.MeasurementWaits, s.Stats.MinPerLearner, s.Stats.MaxPerLearner, s.Stats.DroppedFrames)
	if s.Stats.MeasurementWaits == 0 {
		t.Error("thirty latency cells at once and none waited for the measurement core")
	}
	// Live: the teacher's stream carried a snapshot with the curves.
	for {
		data := waitEvent(t, teacherEvents, "snapshot")
		var ls ClassSnapshot
		_ = json.Unmarshal(data, &ls)
		if len(ls.Learners) == n && len(ls.Predictions) == 1 {
			break
		}
	}
}

// matrixRow is one line of the isolation matrix: a route, who asks, what
// is asked, and the status the server must answer.
type matrixRow struct {
	route, who, what string
	want             int
	got              int
	note             string
}

// TestClassIsolationMatrix tries every REST and websocket route as the
// teacher, as a learner on its own things, as a learner on another
// learner's and the teacher's things, as a removed learner and with no
// token, and prints the matrix.
func TestClassIsolationMatrix(t *testing.T) {
	ts, dir := newClassServer(t, ClassConfig{})
	a := ts.join(t, "Ada")
	b := ts.join(t, "Bob")
	gone := ts.join(t, "Gone")
	A, B, G := a.cookie(), b.cookie(), gone.cookie()
	const T = "teacher"

	// Each owns a notebook: the teacher t.md, Ada a.md.
	nb := `{"title":"%s","cells":[{"cell_type":"code","kind":"sql","source":"SELECT %d"}]}`
	if code, body := ts.do(t, T, "PUT", "/api/notebooks/t.md", fmt.Sprintf(nb, "teacher's", 1)); code != 200 {
		t.Fatalf("teacher save: %d %s", code, body)
	}
	if code, body := ts.do(t, A, "PUT", "/api/notebooks/a.md", fmt.Sprintf(nb, "Ada's", 2)); code != 200 {
		t.Fatalf("learner save: %d %s", code, body)
	}
	ac, _ := ts.dialAs(t, A, "tab1")
	tc, _ := ts.dialAs(t, T, "teacher-tab")
	_ = tc
	// The removed learner had a session; removing it ends it.
	gc, _ := ts.dialAs(t, G, "tab1")
	if code, body := ts.do(t, B, "DELETE", "/api/class/learners/"+gone.ID, ""); code != 403 {
		t.Fatalf("a learner removed another: %d %s", code, body)
	}
	if code, body := ts.do(t, T, "DELETE", "/api/class/learners/"+gone.ID, ""); code != 200 {
		t.Fatalf("teacher remove: %d %s", code, body)
	}
	select {
	case _, ok := <-gc.frames:
		for ok {
			_, ok = <-gc.frames
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the removed learner's websocket stayed open")
	}

	var rows []matrixRow
	rest := func(route, who, cookie, what, method, path, body string, want int) {
		code, _ := ts.do(t, cookie, method, path, body)
		rows = append(rows, matrixRow{route: route, who: who, what: what, want: want, got: code})
	}
	type role struct{ name, cookie string }
	everyone := []role{{"teacher", T}, {"learner", A}, {"removed learner", G}, {"anonymous", ""}}
	for _, r := range []struct {
		method, path, body string
		// want for teacher, learner, removed, anonymous
		want [4]int
	}{
		{"GET", "/api/status", "", [4]int{200, 200, 401, 401}},
		{"GET", "/api/lessons", "", [4]int{200, 200, 401, 401}},
		{"GET", "/api/lessons/nope", "", [4]int{404, 404, 401, 401}},
		{"GET", "/api/notebooks", "", [4]int{200, 200, 401, 401}},
		{"POST", "/api/export?format=md", `{"title":"x","cells":[]}`, [4]int{200, 200, 401, 401}},
		{"GET", "/metrics", "", [4]int{200, 403, 401, 401}},
		{"GET", "/", "", [4]int{200, 200, 401, 401}},
		{"GET", "/class", "", [4]int{200, 403, 401, 401}},
		{"GET", "/api/class", "", [4]int{200, 403, 401, 401}},
		{"GET", "/api/class/events", "", [4]int{200, 403, 401, 401}},
		{"POST", "/api/class/push", `{"lesson":"latency"}`, [4]int{200, 403, 401, 401}},
		{"POST", "/api/class/lock", `{"cell":"x","locked":false}`, [4]int{200, 403, 401, 401}},
		{"DELETE", "/api/class/learners/{unknown}", "", [4]int{404, 403, 401, 401}},
		{"GET", "/api/class/me", "", [4]int{200, 200, 401, 401}},
		{"GET", "/api/class/me/events", "", [4]int{403, 200, 401, 401}},
		{"GET", "/join", "", [4]int{200, 200, 200, 200}},
	} {
		for i, who := range everyone {
			rest(r.method+" "+r.path, who.name, who.cookie, "", r.method, r.path, r.body, r.want[i])
		}
	}
	// Notebooks: each reads and writes only its own folder.
	rest("GET /api/notebooks/{path}", "learner", A, "its own a.md", "GET", "/api/notebooks/a.md", "", 200)
	rest("GET /api/notebooks/{path}", "other learner", B, "Ada's a.md", "GET", "/api/notebooks/a.md", "", 404)
	rest("GET /api/notebooks/{path}", "learner", A, "the teacher's t.md", "GET", "/api/notebooks/t.md", "", 404)
	rest("GET /api/notebooks/{path}", "teacher", T, "its own t.md", "GET", "/api/notebooks/t.md", "", 200)
	rest("GET /api/notebooks/{path}", "learner", A, "../t.md (escape)", "GET", "/api/notebooks/..%2ft.md", "", 400)
	rest("GET /api/notebooks/{path}", "learner", A, ".class/{Bob}/a.md", "GET", "/api/notebooks/.class%2f"+b.ID+"%2fa.md", "", 400)
	rest("GET /api/notebooks/{path}", "teacher", T, ".class/{Ada}/a.md", "GET", "/api/notebooks/.class%2f"+a.ID+"%2fa.md", "", 400)
	rest("GET /api/notebooks/{path}", "removed learner", G, "a.md", "GET", "/api/notebooks/a.md", "", 401)
	rest("PUT /api/notebooks/{path}", "other learner", B, "a.md (lands in Bob's folder)", "PUT", "/api/notebooks/a.md", fmt.Sprintf(nb, "Bob's", 3), 200)
	rest("PUT /api/notebooks/{path}", "learner", A, "t.md (lands in Ada's folder)", "PUT", "/api/notebooks/t.md", fmt.Sprintf(nb, "Ada's t", 4), 200)
	rest("PUT /api/notebooks/{path}", "removed learner", G, "a.md", "PUT", "/api/notebooks/a.md", fmt.Sprintf(nb, "x", 5), 401)
	rest("PUT /api/notebooks/{path}", "anonymous", "", "a.md", "PUT", "/api/notebooks/a.md", fmt.Sprintf(nb, "x", 5), 401)
	rest("POST /api/class/join", "anonymous", "", "wrong code", "POST", "/api/class/join", `{"code":"NOPE99","name":"Eve"}`, 403)
	rest("POST /api/class/join", "anonymous", "", "empty name", "POST", "/api/class/join", `{"code":"JOIN42","name":" "}`, 400)

	// What the writes above did: nobody's file changed but the writer's.
	for _, f := range []struct{ path, want string }{
		{"t.md", "teacher's"},
		{filepath.Join(".class", a.ID, "a.md"), "Ada's"},
		{filepath.Join(".class", b.ID, "a.md"), "Bob's"},
		{filepath.Join(".class", a.ID, "t.md"), "Ada's t"},
	} {
		data, err := os.ReadFile(filepath.Join(dir, f.path))
		if err != nil || !bytes.Contains(data, []byte(f.want)) {
			t.Errorf("%s: %v, want it to hold %q:\n%s", f.path, err, f.want, data)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".class", gone.ID, "a.md")); err == nil {
		t.Error("the removed learner's write landed")
	}
	// Listings: a learner sees its own notebooks only.
	_, body := ts.do(t, A, "GET", "/api/notebooks", "")
	if !strings.Contains(body, `"a.md"`) || !strings.Contains(body, `"t.md"`) || strings.Contains(body, "teacher's") || strings.Contains(body, "Bob") {
		t.Errorf("Ada's listing: %s", body)
	}
	_, body = ts.do(t, T, "GET", "/api/notebooks", "")
	if strings.Contains(body, "Ada") || strings.Contains(body, ".class") {
		t.Errorf("the teacher's listing shows the learners' folders: %s", body)
	}

	// Websocket routes.
	ws := func(who, cookie, session, what string, want int, wantSession string) {
		c, code := ts.dialAs(t, cookie, session)
		row := matrixRow{route: "WS /api/kernel", who: who, what: what, want: want, got: code}
		if c != nil {
			row.note = "attached to " + strings.Replace(c.welcome.Session, a.ID, "{Ada}", 1)
			if wantSession != "" && c.welcome.Session != wantSession {
				row.got = -1
				row.note += ", want " + wantSession
			}
			c.conn.Close()
		}
		rows = append(rows, row)
	}
	ws("learner", A, "tab1", "its own session tab1", 101, prefix(a.ID)+"tab1")
	ws("other learner", B, prefix(a.ID)+"tab1", "Ada's session by its full id", 403, "")
	ws("learner", A, "teacher-tab", "the teacher's session teacher-tab", 101, prefix(a.ID)+"teacher-tab")
	ws("learner", A, DemoSession, "the projector demo session", 101, prefix(a.ID)+DemoSession)
	ws("teacher", T, "teacher-tab", "its own session", 101, "teacher-tab")
	ws("removed learner", G, "tab1", "its old session", 401, "")
	ws("anonymous", "", "tab1", "a session", 401, "")

	// Websocket notebook requests are scoped like REST ones.
	req := ac.send(kernel.ChannelShell, kernel.MsgNotebookOpenRequest, map[string]string{"path": "t.md"})
	ms := ac.until(replyTo(req, kernel.MsgNotebookOpenReply))
	var rep struct{ Status, Ename string }
	_ = ms[len(ms)-1].DecodeContent(&rep)
	got := 200
	if rep.Ename == "NotFound" {
		got = 404
	}
	nbs := 0
	if rep.Status == kernel.StatusOK {
		// Ada has a t.md of her own now: the reply must be hers.
		var v struct {
			Notebook Doc `json:"notebook"`
		}
		_ = ms[len(ms)-1].DecodeContent(&v)
		if v.Notebook.Title != "Ada's t" {
			got = -1
		}
		nbs++
	}
	rows = append(rows, matrixRow{route: "WS notebook_open_request", who: "learner", what: "t.md (Ada's own, not the teacher's)", want: 200, got: got})
	req = ac.send(kernel.ChannelShell, kernel.MsgNotebookOpenRequest, map[string]string{"path": "../t.md"})
	ms = ac.until(replyTo(req, kernel.MsgNotebookOpenReply))
	_ = ms[len(ms)-1].DecodeContent(&rep)
	got = 200
	if rep.Ename == "BadRequest" {
		got = 400
	}
	rows = append(rows, matrixRow{route: "WS notebook_open_request", who: "learner", what: "../t.md (escape)", want: 400, got: got})

	var sb strings.Builder
	fmt.Fprintf(&sb, "isolation matrix (route × role → status):\n%-38s %-16s %-40s %5s %5s  %s\n", "route", "role", "asks for", "want", "got", "note")
	for _, r := range rows {
		mark := ""
		if r.got != r.want {
			mark = "  <-- WRONG"
			t.Errorf("%s as %s (%s): got %d, want %d %s", r.route, r.who, r.what, r.got, r.want, r.note)
		}
		fmt.Fprintf(&sb, "%-38s %-16s %-40s %5d %5d  %s%s\n", r.route, r.who, r.what, r.want, r.got, r.note, mark)
	}
	t.Log(sb.String())
}

// TestClassTeacherActions: a push reaches every learner, a locked cell is
// refused until unlocked, a demo's outputs reach learners, a learner's
// queue is bounded, and removing a learner stops its sessions.
func TestClassTeacherActions(t *testing.T) {
	ts, _ := newClassServer(t, ClassConfig{MaxQueued: 1, CellMemory: 1 << 20})
	a := ts.join(t, "Ada")
	ev := ts.events(t, a.cookie(), "/api/class/me/events")
	waitEvent(t, ev, "state")
	ac, _ := ts.dialAs(t, a.cookie(), "tab1")
	// Event streams are bounded like tabs (MaxSessions, 3 by default).
	waitEvent(t, ts.events(t, a.cookie(), "/api/class/me/events"), "state")
	waitEvent(t, ts.events(t, a.cookie(), "/api/class/me/events"), "state")
	if code, body := ts.do(t, a.cookie(), "GET", "/api/class/me/events", ""); code != http.StatusTooManyRequests {
		t.Errorf("a fourth event stream: %d %s", code, body)
	}

	if code, body := ts.do(t, "teacher", "POST", "/api/class/push", `{"lesson":"latency","cell":"c1"}`); code != 200 {
		t.Fatalf("push: %d %s", code, body)
	}
	if d := waitEvent(t, ev, "push"); !strings.Contains(string(d), `"lesson":"latency"`) {
		t.Errorf("push event %s", d)
	}

	ts.do(t, "teacher", "POST", "/api/class/lock", `{"cell":"c1","locked":true}`)
	waitEvent(t, ev, "locks")
	r, _ := runCell(ac, "echo", "hi", "c1")
	if r.Status != kernel.StatusError || r.Ename != ErrLocked {
		t.Errorf("locked cell ran: %+v", r)
	}
	ts.do(t, "teacher", "POST", "/api/class/lock", `{"cell":"c1","locked":false}`)
	if r, _ := runCell(ac, "echo", "hi", "c1"); r.Status != kernel.StatusOK {
		t.Errorf("unlocked cell: %+v", r)
	}

	// The demo: the teacher runs a cell in the demo session.
	tc, _ := ts.dialAs(t, "teacher", DemoSession)
	if r, _ := runCell(tc, "echo", "look at the projector", ""); r.Status != kernel.StatusOK {
		t.Fatalf("demo: %+v", r)
	}
	for {
		d := waitEvent(t, ev, "demo")
		if strings.Contains(string(d), "look at the projector") && strings.Contains(string(d), kernel.MsgExecuteResult) {
			break
		}
	}

	// The per-learner memory: a 4 MiB latency buffer is over Ada's 1 MiB
	// but within the teacher's 64 MiB.
	big := "min=4K max=4M ppo=1 reps=1 sample=1ms huge=false"
	if r, _ := runCell(ac, kernel.KindLatency, big, "big"); r.Ename != kernel.ErrMemoryLimit {
		t.Errorf("learner's 4 MiB latency cell under a 1 MiB class limit: %+v", r)
	}
	if r, _ := runCell(tc, kernel.KindLatency, big, "big"); r.Status != kernel.StatusOK {
		t.Errorf("teacher's 4 MiB latency cell: %+v", r)
	}

	// The per-learner queue: one cell in flight at most.
	slow := ac.executeCell("slow", "", "s")
	r, _ = runCell(ac, "echo", "second", "e")
	if r.Ename != kernel.ErrQueueFull {
		t.Errorf("second cell with MaxQueued 1: %+v", r)
	}
	ac.send(kernel.ChannelControl, kernel.MsgInterruptRequest, map[string]any{})
	ac.until(replyTo(slow, kernel.MsgExecuteReply))

	// Removal ends the sessions and the event stream.
	ts.do(t, "teacher", "DELETE", "/api/class/learners/"+a.ID, "")
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-ev:
		case <-deadline:
			t.Fatal("the removed learner's event stream stayed open")
		}
	}
	if _, ok := ts.Manager().Kernel(prefix(a.ID) + "tab1"); ok {
		t.Error("the removed learner's kernel session lives on")
	}
}

// TestClassOff: without Config.Class there are no class routes and no
// learner tokens.
func TestClassOff(t *testing.T) {
	ts := newTestServer(t, Config{})
	for _, p := range []string{"/class", "/api/class", "/join"} {
		if code, _ := ts.do(t, "teacher", "GET", p, ""); code != 404 {
			t.Errorf("GET %s without a class: %d", p, code)
		}
	}
	if code, _ := ts.do(t, "", "POST", "/api/class/join", `{"code":"x","name":"y"}`); code == 200 {
		t.Error("joined a server without a class")
	}
	if _, err := New(Config{NoToken: true, Loopback: true, Class: &ClassConfig{Name: "x"}, Logger: quiet()}); err == nil {
		t.Error("a class without a token was accepted")
	}
}

// TestSetMemberKeepsUnknownMembers: capping a learner's timeout rewrites
// attrs and nothing else of the request (a prediction's "predict" and
// "guess" members pass through).
func TestSetMemberKeepsUnknownMembers(t *testing.T) {
	m := kernel.Message{Header: kernel.Header{MsgType: kernel.MsgExecuteRequest},
		Content: json.RawMessage(`{"code":"x","kind":"sql","predict":{"question":"q","unit":"ns","measure":"elapsed(1)"},"guess":{"value":3}}`)}
	if err := setMember(&m, "attrs", map[string]string{"timeout": "2m0s"}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := m.DecodeContent(&got); err != nil {
		t.Fatal(err)
	}
	if got["predict"] == nil || got["guess"] == nil || got["code"] != "x" || got["attrs"].(map[string]any)["timeout"] != "2m0s" {
		t.Errorf("content after setMember: %v", got)
	}
	m.Content = json.RawMessage(`[1]`)
	if err := setMember(&m, "attrs", nil); err == nil {
		t.Error("setMember accepted an array content")
	}
}

func TestCounterFigures(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want []figure
	}{
		{"none", nil, nil},
		{"not a report", []int{1}, nil},
		{"software only", map[string]any{"total": map[string]any{
			"events": []any{
				map[string]any{"name": "cycles", "available": false, "value": 0},
				map[string]any{"name": "task-clock", "available": true, "value": 2e6},
				map[string]any{"name": "page-faults", "available": true, "value": 12},
			},
			"derived": []any{map[string]any{"name": "cpus-utilized", "value": 0.5}},
		}}, []figure{{"cpus-utilized", 0.5}, {"task-clock", 2e6}, {"page-faults", 12}}},
		{"ipc first", map[string]any{"total": map[string]any{
			"events":  []any{map[string]any{"name": "instructions", "available": true, "value": 10}},
			"derived": []any{map[string]any{"name": "ipc", "value": 1.5}},
		}}, []figure{{"ipc", 1.5}, {"instructions", 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := counterFigures(tc.in)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("counterFigures = %v, want %v", got, tc.want)
			}
		})
	}
	model := `{"queries":[{"modelled":true,"rows":100,"total":{"dram_lines_read":50,"l2_misses":70,"l3_misses":40}},
		{"modelled":false,"why":"no GROUP BY"}]}`
	if got, want := fmt.Sprint(modelFigures(json.RawMessage(model))), fmt.Sprint([]figure{{"DRAM lines", 50}, {"L2 misses", 70}, {"L3 misses", 40}, {"DRAM lines/row", 0.5}}); got != want {
		t.Errorf("modelFigures = %s, want %s", got, want)
	}
	if got := modelFigures(json.RawMessage(`{"queries":[{"modelled":false}]}`)); got != nil {
		t.Errorf("modelFigures of an unmodelled report = %v", got)
	}
}

// TestClassCellTimeout: a learner's cell stops at the class's time limit,
// and its own timeout attribute cannot raise it.
func TestClassCellTimeout(t *testing.T) {
	ts, _ := newClassServer(t, ClassConfig{CellTimeout: 200 * time.Millisecond})
	l := ts.join(t, "Ada")
	c, _ := ts.dialAs(t, l.cookie(), "tab")
	start := time.Now()
	req := c.send(kernel.ChannelShell, kernel.MsgExecuteRequest, kernel.ExecuteRequest{Kind: "slow", Attrs: map[string]string{"timeout": "1h"}})
	ms := c.until(replyTo(req, kernel.MsgExecuteReply))
	var r kernel.ExecuteReply
	_ = ms[len(ms)-1].DecodeContent(&r)
	if r.Ename != kernel.ErrTimeout || time.Since(start) > 10*time.Second {
		t.Errorf("a learner's slow cell with timeout=1h under a 200 ms class limit: %+v after %v", r, time.Since(start))
	}
}
