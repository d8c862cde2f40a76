package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"cachebook/engine"
	"cachebook/kernel"
	"cachebook/web"
	"cachebook/web/static"
)

// classServer starts an in-process server in classroom mode over the
// e2e data set.
func classServer(t *testing.T) (base string) {
	t.Helper()
	return classServerWith(t, web.ClassConfig{})
}

// classServerWith is classServer with the class's limits of cc.
func classServerWith(t *testing.T, cc web.ClassConfig) (base string) {
	t.Helper()
	return classServerLessons(t, cc, web.BuiltinLessons())
}

// classServerLessons is classServerWith serving lessons.
func classServerLessons(t *testing.T, cc web.ClassConfig, lessons web.Lessons) (base string) {
	t.Helper()
	cc.Name, cc.Code = "Memory latency, 2nd year", "CACHE7"
	if env.data == "" {
		t.Skip("needs the e2e data set (not with CACHEBOOK_E2E_URL)")
	}
	reg := kernel.DefaultRegistry()
	db, err := engine.Open(engine.Options{DataDir: env.data})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{
		Token:     "secret",
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Loopback:  true,
		Static:    static.FS(),
		Lessons:   lessons,
		Notebooks: &web.NotebookDir{Root: t.TempDir()},
		Class:     &cc,
		Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: reg, DB: db, DataPath: env.data,
			Limits: kernel.Limits{CellMemory: 256 << 20}}, Scheduler: kernel.NewScheduler(1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

// simLearner joins the class over HTTP and runs cells on its websocket.
type simLearner struct {
	name, cookie string
	conn         *websocket.Conn
}

func joinClass(t *testing.T, base, name string) *simLearner {
	resp, err := http.Post(base+"/api/class/join", "application/json", strings.NewReader(fmt.Sprintf(`{"code":"cache7","name":%q}`, name)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	l := &simLearner{name: name}
	for _, c := range resp.Cookies() {
		if c.Name == web.LearnerCookieName {
			l.cookie = c.Name + "=" + c.Value
		}
	}
	if l.cookie == "" {
		t.Fatalf("join %s: %s", name, resp.Status)
	}
	u := "ws" + strings.TrimPrefix(base, "http") + "/api/kernel?" + url.Values{"session": {"tab"}}.Encode()
	l.conn, _, err = websocket.DefaultDialer.Dial(u, http.Header{"Cookie": {l.cookie}})
	if err != nil {
		t.Fatalf("%s: websocket: %v", name, err)
	}
	t.Cleanup(func() { l.conn.Close() })
	if _, _, err := l.conn.ReadMessage(); err != nil { // welcome
		t.Fatal(err)
	}
	return l
}

// run sends a cell and reads frames until its execute_reply. A cell with
// a prediction (predict-then-run, notebook/predict) carries its spec and
// the learner's guess, as the page sends them.
func (l *simLearner) run(kind, code, cellID, predict, guess string) (kernel.ExecuteReply, error) {
	content := map[string]any{"code": code, "kind": kind, "cell_id": cellID}
	if kind == kernel.KindSQL {
		content["attrs"] = map[string]string{"counters": "both"} // software counters here, and the cache model
	}
	if predict != "" {
		content["predict"], content["guess"] = json.RawMessage(predict), json.RawMessage(guess)
	}
	m := kernel.NewMessage(kernel.ChannelShell, kernel.MsgExecuteRequest, l.name, kernel.Header{}, content)
	data, _ := kernel.Encode(&m)
	if err := l.conn.WriteMessage(websocket.TextMessage, data); err != nil {
		return kernel.ExecuteReply{}, err
	}
	_ = l.conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for {
		_, data, err := l.conn.ReadMessage()
		if err != nil {
			return kernel.ExecuteReply{}, err
		}
		f, err := kernel.Decode(data, 0)
		if err != nil {
			return kernel.ExecuteReply{}, err
		}
		if f.Header.MsgType == kernel.MsgExecuteReply && f.ParentHeader.MsgID == m.Header.MsgID {
			var r kernel.ExecuteReply
			err := f.DecodeContent(&r)
			return r, err
		}
	}
}

// TestClassViewThirtyCurves: thirty learners (Go websocket clients) run a
// latency cell, a prediction cell and an SQL cell; the teacher's class view
// in Chromium shows thirty curves with the median, the guess distribution
// and the SQL results side by side, in normal and projector size.
func TestClassViewThirtyCurves(t *testing.T) {
	base := classServer(t)
	ctx := browser(t)
	do(t, ctx, "open the class view",
		chromedp.EmulateViewport(1600, 1000),
		chromedp.Navigate(base+"/class?token=secret"),
		chromedp.WaitVisible(chromedp.CSS("#roster")),
		poll(`document.querySelector(".joincode") && document.querySelector(".joincode").textContent === "CACHE7"`),
	)
	const n = 30
	// The latency cell asks where its largest working set lives; the SQL
	// cell asks for the GROUP BY's cost per row.
	where := `{"question":"Where does the largest working set live?","choices":["L1","L2","L3","DRAM"],"bounds":[3,8,30],"measure":"points[last].ns"}`
	perRow := `{"question":"How many ns per row will this GROUP BY take?","unit":"ns","measure":"elapsed(1) / scanned(1)","article":{"value":36,"source":"Pivot"}}`
	choices := []string{"L2", "L3", "L3", "DRAM", "L3", "L1"}
	var wg sync.WaitGroup
	errc := make(chan error, 4*n)
	for i := 0; i < n; i++ {
		l := joinClass(t, base, fmt.Sprintf("Learner %02d", i+1))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for _, c := range []struct{ kind, code, id, predict, guess string }{
				{kernel.KindLatency, fmt.Sprintf("min=4K max=%dK ppo=2 reps=1 sample=2ms huge=false seed=%d", 256<<(i%3), i+1), "your-curve",
					where, fmt.Sprintf(`{"choice":%q}`, choices[i%len(choices)])},
				{kernel.KindSQL, "SELECT UserID, count(*) AS c FROM hits GROUP BY UserID ORDER BY c DESC LIMIT 3", "groupby-users",
					perRow, fmt.Sprintf(`{"value":%g}`, []float64{5, 10, 20, 40, 80}[i%5])},
			} {
				r, err := l.run(c.kind, c.code, c.id, c.predict, c.guess)
				if err == nil && r.Status != kernel.StatusOK {
					err = fmt.Errorf("%s %s: %s %s", l.name, c.kind, r.Ename, r.Evalue)
				}
				if err != nil {
					errc <- err
				}
			}
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	do(t, ctx, "thirty curves, the guesses and the SQL results arrive live",
		poll(`document.querySelector("#curveplot").dataset.curves === "30"`),
		poll(`[...document.querySelectorAll(".classpred[data-pred='your-curve'] .count")].reduce((s, e) => s + Number(e.textContent), 0) === 30`),
		poll(`[...document.querySelectorAll(".classpred[data-pred='groupby-users'] .count")].reduce((s, e) => s + Number(e.textContent), 0) === 30`),
		poll(`document.querySelectorAll("#sqltable tbody tr").length === 30`),
		poll(`document.querySelectorAll("#rostertable tbody tr").length === 30`),
	)
	series := get(t, ctx, "count the drawn series", chromedp.Evaluate[int](`window.cachebookClass.plot.series.length`))
	if series != 32 { // x, 30 learners, the median
		t.Errorf("the curve chart has %d series, want 32", series)
	}
	counts := get(t, ctx, "read the distribution", chromedp.Evaluate[map[string]int](
		`Object.fromEntries([...document.querySelectorAll(".classpred[data-pred='your-curve'] .bin")].map(b => [b.dataset.label, Number(b.querySelector(".count").textContent)]))`))
	if counts["L3"] != 15 || counts["L1"] != 5 || counts["L2"] != 5 || counts["DRAM"] != 5 {
		t.Errorf("guess distribution %v, want L1 5, L2 5, L3 15, DRAM 5", counts)
	}
	screenshot(t, ctx, "class-view")

	// Projector mode: the large-font switch scales the chart's text too.
	small := get(t, ctx, "axis font", chromedp.Evaluate[string](`window.cachebookClass.plot.axes[0].font[0]`))
	do(t, ctx, "switch to the projector size",
		chromedp.Click(chromedp.CSS("#large")),
		poll(`document.body.classList.contains("large")`),
		poll(`document.querySelector("#curveplot").dataset.curves === "30"`),
	)
	large := get(t, ctx, "axis font", chromedp.Evaluate[string](`window.cachebookClass.plot.axes[0].font[0]`))
	if small == large {
		t.Errorf("the axis font stayed %q in projector mode", large)
	}
	sticky := get(t, ctx, "toolbar position", chromedp.Evaluate[string](`getComputedStyle(document.querySelector(".classbar")).position`))
	if sticky != "sticky" {
		t.Errorf("the class toolbar is %s, want sticky", sticky)
	}
	screenshot(t, ctx, "projector")
	var snap web.ClassSnapshot
	raw := get(t, ctx, "snapshot", chromedp.Evaluate[string](`JSON.stringify(window.cachebookClass.snap)`))
	if err := json.Unmarshal([]byte(raw), &snap); err != nil {
		t.Fatal(err)
	}
	t.Logf("class view: %d learners, %d cells, p50 %.0f ms, p99 %.0f ms, %d measurements waited for the core, median curve %d points",
		len(snap.Learners), snap.Stats.Cells, snap.Stats.P50Ms, snap.Stats.P99Ms, snap.Stats.MeasurementWaits, len(snap.Median))
}

// teacherDo sends a teacher's request to the class server.
func teacherDo(t *testing.T, base, method, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "token secret")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
}

// TestClassLearnerPage: a learner joins in the browser with the join link,
// lands on the notebook with the class bar, follows the teacher's push,
// sees a locked cell marked and watches the projector demo.
func TestClassLearnerPage(t *testing.T) {
	base := classServer(t)
	ctx := browser(t)
	do(t, ctx, "join with the link",
		chromedp.Navigate(base+"/join?code=CACHE7"),
		chromedp.WaitVisible(chromedp.CSS("#joinname")),
		chromedp.SendKeys(chromedp.CSS("#joinname"), "Grace"),
		chromedp.Click(chromedp.CSS("#joinbtn")),
		chromedp.WaitVisible(chromedp.CSS("#classbanner")),
		chromedp.WaitVisible(chromedp.CSS(".lessons a")),
	)
	if b := text(t, ctx, "#classbanner"); !strings.Contains(b, "Grace") || !strings.Contains(b, "Memory latency") {
		t.Errorf("class bar %q", b)
	}
	if c := get(t, ctx, "the page's cookies", chromedp.Evaluate[string](`document.cookie`)); strings.Contains(c, web.LearnerCookieName) {
		t.Errorf("the learner's token is readable by the page: %q", c)
	}
	teacherDo(t, base, "POST", "/api/class/push", `{"lesson":"01-latency"}`)
	do(t, ctx, "the push opens the lesson",
		poll(`location.hash === "#/lesson/01-latency"`),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	// The lesson's first prediction: Grace guesses, commits and runs the
	// latency cell (kept small), and the teacher's class view has her
	// guess beside her measured value and her curve.
	const pc = "latency-curve"
	if !get(t, ctx, "shrink the latency cell", chromedp.Evaluate[bool](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.id === "latency-curve");
		if (!c) return false;
		c.setAttr("max", "256K");
		return true;
	})()`)) {
		t.Fatal("lesson 1 has no latency-curve cell")
	}
	do(t, ctx, "guess, commit and run the lesson's latency cell",
		chromedp.WaitVisible(cellSel(pc, ".predict input.guessin")),
		chromedp.SendKeys(cellSel(pc, ".predict input.guessin"), "150"),
		chromedp.Click(cellSel(pc, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(pc, ".predict .locked")),
		clickRun(pc),
		chromedp.WaitVisible(cellSel(pc, ".prediction")),
	)
	var snap web.ClassSnapshot
	for deadline := time.Now().Add(10 * time.Second); ; {
		req, _ := http.NewRequest("GET", base+"/api/class", nil)
		req.Header.Set("Authorization", "token secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&snap)
		resp.Body.Close()
		if err == nil && len(snap.Predictions) == 1 && len(snap.Learners) == 1 && len(snap.Learners[0].Curve) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the class view has no prediction and curve from the learner's page: %+v", snap)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := snap.Predictions[0]; p.Cell != pc || len(p.Guesses) != 1 || p.Guesses[0].Learner != "Grace" ||
		p.Guesses[0].Guess == nil || *p.Guesses[0].Guess != 150 || p.Guesses[0].Measured == nil {
		t.Errorf("the class view's prediction from the page: %+v", snap.Predictions)
	}
	cell := pc
	teacherDo(t, base, "POST", "/api/class/lock", fmt.Sprintf(`{"cell":%q,"locked":true}`, cell))
	do(t, ctx, "the locked cell is marked",
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`.cell[data-cell=%q][data-class-locked]`, cell))),
	)
	// The demo: the teacher runs a latency cell in the demo session.
	u := "ws" + strings.TrimPrefix(base, "http") + "/api/kernel?session=" + web.DemoSession
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"Authorization": {"token secret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _, _ = conn.ReadMessage()
	teacher := &simLearner{name: "teacher", conn: conn}
	if r, err := teacher.run(kernel.KindLatency, "min=4K max=256K ppo=2 reps=1 sample=2ms huge=false", "demo", "", ""); err != nil || r.Status != kernel.StatusOK {
		t.Fatalf("demo: %v %+v", err, r)
	}
	do(t, ctx, "the demo shows on the learner's page",
		chromedp.WaitVisible(chromedp.CSS(".learnerdemo .chart canvas")),
	)
	screenshot(t, ctx, "class-learner")

	// A latency curve measured in the learner's own browser (the cell
	// announces it when the WebAssembly kernel ran it) reaches the class
	// view marked own machine, with the browser's description.
	get(t, ctx, "announce an own-machine curve", chromedp.Evaluate[bool](`(window.dispatchEvent(new CustomEvent("cachebook:own-measurement", { detail: {
		cell: "latency-curve",
		measurement: { kind: "latency", latency: { points: [{ bytes: 4096, ns: 1.1 }, { bytes: 1048576, ns: 5 }, { bytes: 67108864, ns: 80 }],
			levels: [{ name: "L1", ns: 1.1, size_bytes: 49152 }, { name: "memory", ns: 80 }] } },
	} })), true)`))
	for deadline := time.Now().Add(10 * time.Second); ; {
		req, _ := http.NewRequest("GET", base+"/api/class", nil)
		req.Header.Set("Authorization", "token secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&snap)
		resp.Body.Close()
		if err == nil && len(snap.Learners) == 1 && snap.Learners[0].Own != nil {
			m := snap.Learners[0].Own.Machine
			if m.Cores == 0 || !strings.Contains(m.Browser, "Chrom") || len(m.Plateaus) != 2 || snap.Stats.OwnCurves != 1 {
				t.Errorf("own machine in the class view: %+v (stats %+v)", m, snap.Stats)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the own-machine curve did not reach the class view: %+v", snap.Learners)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestProjectorNotebookChart: on the notebook page the large-font switch
// scales a chart drawn before it (canvas text and legend) and the page
// toolbar stays in view when the notebook scrolls.
func TestProjectorNotebookChart(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := get(t, ctx, "find the latency cell", chromedp.Evaluate[string](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.kind === "latency");
		if (!c) return "";
		c.setAttr("max", "1M");
		return c.id;
	})()`))
	if id == "" {
		t.Skip("the first lesson has no latency cell")
	}
	do(t, ctx, "run the latency cell, then switch to the projector size",
		chromedp.Click(cellSel(id, "button.run")),
		chromedp.WaitVisible(cellSel(id, ".chart.measurement .uplot[data-text-scale]")),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
		chromedp.Click(chromedp.CSS("#large")),
		poll(fmt.Sprintf(`Number(document.querySelector(%s).dataset.textScale) > 1.3`, jsString(cellEl(id)+" .chart.measurement .uplot"))),
		chromedp.ScrollIntoView(cellSel(id, ".chart.measurement")),
	)
	top := get(t, ctx, "toolbar position after scrolling", chromedp.Evaluate[float64](`(() => {
		const hd = document.querySelector("header").getBoundingClientRect();
		const tb = document.querySelector("#app > .toolbar").getBoundingClientRect();
		return window.scrollY > 0 ? tb.top - hd.bottom : -1000;
	})()`))
	if top < -2 || top > 2 {
		t.Errorf("the toolbar is %.0f px from the header's bottom after scrolling, want it right under it", top)
	}
	screenshot(t, ctx, "projector-notebook")
	do(t, ctx, "normal size again", chromedp.Click(chromedp.CSS("#large")),
		poll(fmt.Sprintf(`document.querySelector(%s).dataset.textScale === "1"`, jsString(cellEl(id)+" .chart.measurement .uplot"))))
}
