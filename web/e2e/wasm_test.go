package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWasmSameResult runs the same cell on the server and in the browser
// (cachebook.wasm in a Web Worker over a locally generated table of the same
// rows) and wants the same table.
func TestWasmSameResult(t *testing.T) {
	if !env.wasm {
		t.Skipf("no WebAssembly build: %s", env.wasmErr)
	}
	ctx := browser(t)
	openLesson(t, ctx)
	id := setCell(t, ctx, query)
	do(t, ctx, "run on the server",
		chromedp.Click(cellSel(id, "button.run")),
		chromedp.WaitVisible(cellSel(id, "table.grid tbody tr")),
	)
	serverTime := text(t, ctx, cellEl(id)+" .rowcount")
	want := tableText(t, ctx, id)

	start := time.Now()
	do(t, ctx, "switch to WebAssembly", switchToWasm()...)
	ready := time.Since(start)
	t.Logf("wasm worker: %s", get(t, ctx, "worker info", chromedp.Evaluate[string](
		`(() => { const i = cachebookApp.wasm.info; return "go " + i.go + ", fetch+compile+start " + i.loadMs.toFixed(0) + " ms, " + i.gen.message; })()`)))
	banner := text(t, ctx, ".banner")
	do(t, ctx, "run in the browser",
		chromedp.Click(cellSel(id, "button.run")),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("WebAssembly")`, jsString(cellEl(id)+" .timer"))),
		chromedp.WaitVisible(cellSel(id, "table.grid tbody tr")),
	)
	first := time.Since(start)
	wasmTime := text(t, ctx, cellEl(id)+" .rowcount")
	got := tableText(t, ctx, id)
	if got != want {
		t.Errorf("WebAssembly result differs from the server's:\nserver:\n%s\nwasm:\n%s", want, got)
	}
	for _, s := range []string{"single-threaded", "server-only", "coarse"} {
		if !strings.Contains(banner, s) {
			t.Errorf("banner %q does not say %q", banner, s)
		}
	}
	if strings.Contains(banner, "null") || strings.Contains(banner, "undefined") {
		t.Errorf("banner %q prints a missing value", banner)
	}
	if counters := text(t, ctx, cellEl(id)+" .counters"); !strings.Contains(counters, "server-only") {
		t.Errorf("counters panel in the browser says %q", counters)
	}
	t.Logf("server: %s; wasm: %s; wasm ready after %v, first answer after %v", serverTime, wasmTime, ready.Round(time.Millisecond), first.Round(time.Millisecond))
	screenshot(t, ctx, "notebook-wasm")
	if first > 30*time.Second {
		t.Errorf("first WebAssembly answer took %v", first)
	}

	// Interrupt in the browser: the query yields to the worker's event loop
	// every 50 ms, so the cancel message stops it without killing the worker.
	setCell(t, ctx, strings.Repeat(query+";\n", 2000))
	do(t, ctx, "start a long cell in the browser",
		chromedp.Click(cellSel(id, ".cm-line")),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(cellEl(id)+".running")),
	)
	time.Sleep(time.Second)
	start = time.Now()
	do(t, ctx, "I,I interrupts the browser kernel",
		chromedp.KeyEvent("\x1b"),
		chromedp.KeyEvent("i"),
		chromedp.KeyEvent("i"),
		chromedp.WaitVisible(cellSel(id, ".error .ename")),
		chromedp.WaitNotPresent(chromedp.CSS(cellEl(id)+".running")),
	)
	took := time.Since(start)
	t.Logf("in the page: %s", text(t, ctx, cellEl(id)+" .timer"))
	if ename := text(t, ctx, cellEl(id)+" .error .ename"); ename != "Interrupted" {
		t.Errorf("error name %q, want Interrupted", ename)
	}
	status := get(t, ctx, "kernel status", chromedp.Evaluate[string](`document.querySelector(".status").dataset.connection + "/" + document.querySelector(".status").dataset.kernel`))
	t.Logf("browser interrupt took %v; kernel %s", took.Round(time.Millisecond), status)
	// The latency probe runs in the browser too (coarse timer, long samples).
	lat := get(t, ctx, "find the latency cell", chromedp.Evaluate[string](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.kind === "latency");
		if (!c) return "";
		c.setAttr("max", "256K");
		c.setAttr("ppo", "1");
		c.setAttr("reps", "1");
		return c.id;
	})()`))
	if lat != "" {
		do(t, ctx, "run the latency cell in the browser",
			chromedp.Click(cellSel(lat, "button.run")),
			poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(lat)+" .timer"))),
			chromedp.WaitVisible(cellSel(lat, ".chart.measurement canvas")),
			chromedp.ScrollIntoView(cellSel(lat, ".chart.measurement")),
		)
		t.Logf("latency in the browser: %s", text(t, ctx, cellEl(lat)+" .timer"))
		screenshot(t, ctx, "latency-wasm")
	}
	if n := get(t, ctx, "worker terminations", chromedp.Evaluate[int](`cachebookApp.wasm.terminations`)); n != 0 {
		t.Errorf("the interrupt terminated the worker (%d times) instead of cancelling the query", n)
	}
}

// TestWasmHitsSize opens a lesson without ?hits_rows, so that the browser
// kernel sizes its hits table itself (web/wasm DefaultRows), and wants the
// status line to say how large the table is.
func TestWasmHitsSize(t *testing.T) {
	if !env.wasm {
		t.Skipf("no WebAssembly build: %s", env.wasmErr)
	}
	ctx := browser(t)
	start := time.Now()
	do(t, ctx, "open lesson 3 in the browser kernel",
		chromedp.Navigate(env.pageURL+"#/lesson/03-radix"),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="sql"]`)))
	do(t, ctx, "switch lesson 3 to the browser kernel", switchToWasm()...)
	// The kernel runs at once; the table arrives later (a first slice,
	// then the whole of it).
	do(t, ctx, "wait for the whole hits table", pollFor(`cachebookApp.wasm.hits.state === "full"`, 4*time.Minute))
	ready := time.Since(start)
	rows := get(t, ctx, "the table's rows", chromedp.Evaluate[int](`cachebookApp.wasm.info.gen.rows`))
	msg := get(t, ctx, "the generation message", chromedp.Evaluate[string](`cachebookApp.wasm.info.gen.message`))
	status := text(t, ctx, ".status .text")
	if rows < 1_000_000 {
		t.Errorf("the browser's hits table has %d rows, want at least 1 M (radix shows nothing on a table in L2)", rows)
	}
	if want := "hits " + commas(rows) + " rows"; !strings.Contains(status, want) {
		t.Errorf("status line %q does not say %q", status, want)
	}
	t.Logf("status %q; %s; ready %v after opening", status, msg, ready.Round(time.Millisecond))
}

// commas writes n with thousands separators, as toLocaleString("en-US").
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// switchToWasm picks "run in this browser" and waits for the browser
// kernel to be idle.
func switchToWasm() []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.SetValue(chromedp.CSS("#runmode"), "wasm"),
		chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.querySelector("#runmode").dispatchEvent(new Event("change"))`)(c, tg)
			return err
		}),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="in browser"][data-kernel="idle"]`)),
	}
}
