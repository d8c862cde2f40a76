package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWasmEveryLesson runs every lesson with "run in this browser" (Run
// all) and wants every code cell answered visibly: a result, a chart, a
// stream or an error that says why it could not run (UnknownKind,
// Unavailable, MemoryLimit, or SET threads refused by the one-thread
// engine). No cell may be skipped silently, and none may hang. It takes
// several minutes: the lessons' latency cells run in full.
func TestWasmEveryLesson(t *testing.T) {
	if !env.wasm {
		t.Skipf("no WebAssembly build: %s", env.wasmErr)
	}
	if testing.Short() {
		t.Skip("-short: runs every lesson in WebAssembly")
	}
	browser(t) // its context has a minute; every lesson gets four here
	v, _ := baseCtx.Load(t)
	ctx, cancel := context.WithTimeout(v.(context.Context), 30*time.Minute)
	defer cancel()
	openLesson(t, ctx)
	ids := get(t, ctx, "list the lessons", chromedp.Evaluate[string](`(async () => JSON.stringify((await cachebookApp.server.lessons()).lessons.map((l) => l.id)))()`, chromedp.EvalAwaitPromise))
	var lessons []string
	if err := json.Unmarshal([]byte(ids), &lessons); err != nil || len(lessons) == 0 {
		t.Fatalf("lessons %q: %v", ids, err)
	}
	for _, id := range lessons {
		start := time.Now()
		do(t, ctx, "open lesson "+id,
			chromedp.Navigate(env.url+"#/lesson/"+id),
			chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
		)
		do(t, ctx, "switch lesson "+id+" to the browser",
			chromedp.SetValue(chromedp.CSS("#runmode"), "wasm"),
			chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[bool](`document.querySelector("#runmode").dispatchEvent(new Event("change"))`)(c, tg)
				return err
			}),
			chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="in browser"]`)),
		)
		// Run all, with the lesson's own parameters; at most 4 minutes.
		report := get(t, ctx, "run all of "+id+" in the browser", chromedp.Evaluate[string](`(async () => {
			const nb = cachebookApp.nb;
			await Promise.race([nb.runAll(), new Promise((r) => setTimeout(r, 240000))]);
			return JSON.stringify(nb.cells.filter((c) => c.type === "code").map((c) => ({
				id: c.id, kind: c.kind, running: c.running,
				outputs: c.outEl.children.length,
				ename: (c.outEl.querySelector(".error .ename") || {}).textContent || "",
				error: (c.outEl.querySelector(".error") || {}).textContent || "",
				timer: c.timerEl.textContent,
			})));
		})()`, chromedp.EvalAwaitPromise))
		var cells []struct {
			ID, Kind, Ename, Error, Timer string
			Running                       bool
			Outputs                       int
		}
		if err := json.Unmarshal([]byte(report), &cells); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, c := range cells {
			line := fmt.Sprintf("%-10s %-11s outputs %d %s", c.ID, c.Kind, c.Outputs, c.Timer)
			if c.Ename != "" {
				line += " — " + c.Ename + ": " + strings.TrimSpace(strings.TrimPrefix(c.Error, c.Ename))
			}
			lines = append(lines, line)
			switch {
			case c.Running:
				t.Errorf("lesson %s, cell %s (%s): still running after 4 minutes", id, c.ID, c.Kind)
			case c.Outputs == 0:
				t.Errorf("lesson %s, cell %s (%s): no output and no reason (%s)", id, c.ID, c.Kind, c.Timer)
			case c.Ename == "SQLError" && strings.Contains(c.Error, "threads must be an integer between 1 and 1"):
				// SET threads = N in a lesson: the browser's engine has one
				// thread, and the cell says so.
			case c.Ename != "" && c.Ename != "UnknownKind" && c.Ename != "Unavailable" && c.Ename != "MemoryLimit":
				t.Errorf("lesson %s, cell %s (%s) failed in the browser: %s", id, c.ID, c.Kind, c.Error)
			}
		}
		t.Logf("lesson %s in the browser, %v:\n  %s", id, time.Since(start).Round(time.Second), strings.Join(lines, "\n  "))
	}
}
