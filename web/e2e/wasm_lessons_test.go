package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// wasmLessons limits TestWasmEveryLesson to some lessons (comma-separated
// ids), for a quicker look at one.
var wasmLessons = flag.String("wasm-lessons", "", "comma-separated lesson ids TestWasmEveryLesson runs (default: all)")

// TestWasmEveryLesson runs every lesson with "run in this browser" (Run
// all) and wants every code cell to run there: as written, as a
// browser-sized variant that says so (a stream naming the browser's
// limit), or as a model labelled MODELLED — never an error. It logs which
// of the three each cell ran. No cell may be skipped silently, and none
// may hang. It takes several minutes: the lessons' latency cells run in
// full. With -screenshots it saves lesson 5's modelled false-sharing cell.
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
	if *wasmLessons != "" {
		lessons = strings.Split(*wasmLessons, ",")
	}
	counts := map[string]int{}
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
				text: c.outEl.textContent,
				timer: c.timerEl.textContent,
			})));
		})()`, chromedp.EvalAwaitPromise))
		var cells []struct {
			ID, Kind, Ename, Error, Text, Timer string
			Running                             bool
			Outputs                             int
		}
		if err := json.Unmarshal([]byte(report), &cells); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, c := range cells {
			ran := "as written"
			switch {
			case strings.Contains(c.Text, "MODELLED"):
				ran = "model"
			case strings.Contains(c.Text, "browser-sized:") || strings.Contains(c.Text, "on one thread: ") || strings.Contains(c.Text, "on 1 thread: "):
				ran = "variant"
			}
			if c.Ename != "" {
				ran = "error"
			}
			counts[ran]++
			line := fmt.Sprintf("%-22s %-11s %-10s outputs %d %s", c.ID, c.Kind, ran, c.Outputs, c.Timer)
			if c.Ename != "" {
				line += " — " + c.Ename + ": " + strings.TrimSpace(strings.TrimPrefix(c.Error, c.Ename))
			}
			lines = append(lines, line)
			switch {
			case c.Running:
				t.Errorf("lesson %s, cell %s (%s): still running after 4 minutes", id, c.ID, c.Kind)
			case c.Outputs == 0:
				t.Errorf("lesson %s, cell %s (%s): no output and no reason (%s)", id, c.ID, c.Kind, c.Timer)
			case c.Ename != "":
				t.Errorf("lesson %s, cell %s (%s) failed in the browser: %s", id, c.ID, c.Kind, c.Error)
			}
			if strings.Contains(c.Text, "--cell-memory") || strings.Contains(c.Text, "start the server") {
				t.Errorf("lesson %s, cell %s (%s) names a server flag in the browser: %s", id, c.ID, c.Kind, c.Text)
			}
		}
		if id == "05-contention" {
			do(t, ctx, "show the modelled false-sharing cell",
				chromedp.ScrollIntoView(`.cell[data-cell="false-sharing"] .outputs`))
			get(t, ctx, "scroll to its note", chromedp.Evaluate[bool](`(window.scrollBy(0, -140), true)`))
			screenshot(t, ctx, "wasm-false-sharing-modelled")
		}
		t.Logf("lesson %s in the browser, %v:\n  %s", id, time.Since(start).Round(time.Second), strings.Join(lines, "\n  "))
	}
	t.Logf("cells in the browser: %d as written, %d variants, %d models, %d errors", counts["as written"], counts["variant"], counts["model"], counts["error"])
}
