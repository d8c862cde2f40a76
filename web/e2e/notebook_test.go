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

// query is deterministic (ties broken by UserID) so that the server and the
// WebAssembly kernel must print the same table.
const query = "SELECT UserID, count(*) AS c FROM hits GROUP BY UserID ORDER BY c DESC, UserID LIMIT 10"

// openLesson loads the page, opens the first lesson and waits until the
// server kernel is connected.
func openLesson(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, "open the lesson list",
		chromedp.Navigate(env.url),
		chromedp.WaitVisible(chromedp.CSS(".lessons a")),
	)
	screenshot(t, ctx, "lessons")
	do(t, ctx, "open the first lesson",
		chromedp.Click(chromedp.CSS(".lessons a")),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	if title := text(t, ctx, ".nbtitle"); title == "" {
		t.Fatal("the notebook has no title")
	}
}

// setCell puts src into the first SQL cell (adding one when the lesson has
// none) and returns the cell's id.
func setCell(t *testing.T, ctx context.Context, src string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const nb = cachebookApp.nb;
		let c = nb.cells.find((c) => c.type === "code" && c.kind === "sql");
		if (!c) c = nb.add(nb.cells[nb.cells.length - 1], "code");
		c.view.dispatch({changes: {from: 0, to: c.view.state.doc.length, insert: %s}});
		c.el.scrollIntoView();
		return c.id;
	})()`, jsString(src))
	return get(t, ctx, "set the cell's SQL", chromedp.Evaluate[string](js))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func cellEl(id string) string { return fmt.Sprintf(`.cell[data-cell=%q]`, id) }

func cellSel(id, sel string) chromedp.CSS { return chromedp.CSS(cellEl(id) + " " + sel) }

// clickRun presses a cell's Run button from JavaScript. A pointer click at
// the button's coordinates can land on another element when the page's
// layout shifts between locating the button and clicking (a chart above
// finishing its render), which left a cell never started.
func clickRun(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		sel := jsString(cellEl(id) + " button.run")
		if _, err := chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(%s) !== null`, sel))(ctx, tg); err != nil {
			return err
		}
		_, err := chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%s).click(), true)`, sel))(ctx, tg)
		return err
	})
}

// tableText returns the text of the cell's result table, one line per row.
func tableText(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	rows := get(t, ctx, "read the result table", chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll(%s)].map((tr) => [...tr.children].map((td) => td.textContent).join("\t"))`,
		jsString(cellEl(id)+" table.grid tr"))))
	return strings.Join(rows, "\n")
}

func TestRunSQLOnServer(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := setCell(t, ctx, query)
	do(t, ctx, "tick counters, run the cell and wait for its table and counters",
		chromedp.Click(cellSel(id, ".cm-content")), // select the cell: its toggles show
		chromedp.Click(cellSel(id, ".ctoggle input")),
		chromedp.Click(cellSel(id, "button.run")),
		chromedp.WaitVisible(cellSel(id, "table.grid tbody tr")),
		chromedp.WaitVisible(cellSel(id, ".counters")),
	)
	rowcount := text(t, ctx, cellEl(id)+" .rowcount")
	counters := text(t, ctx, cellEl(id)+" .counters")
	table := tableText(t, ctx, id)
	lines := strings.Split(table, "\n")
	if len(lines) != 11 {
		t.Fatalf("want a header and 10 rows, got %d lines:\n%s", len(lines), table)
	}
	if !strings.Contains(lines[0], "UserID") || !strings.Contains(lines[0], "bigint") {
		t.Errorf("header %q lacks the column name and type", lines[0])
	}
	if !strings.HasPrefix(rowcount, "10 rows") {
		t.Errorf("row count line %q", rowcount)
	}
	if !strings.Contains(counters, "IPC") || !strings.Contains(counters, "CPU time") {
		t.Errorf("counters panel %q lacks the IPC and CPU time rows", counters)
	}
	if strings.Contains(counters, "Hardware counters unavailable") && strings.Contains(counters, "recipe") {
		t.Errorf("counters panel shows a recipe line without hardware counters: %q", counters)
	}
	if strings.Contains(counters, "worker 0") {
		t.Errorf("counters panel shows an unexplained worker 0 (the statement's own thread): %q", counters)
	}
	// Counters this host cannot read are greyed out with the reason in
	// their tooltip; CPU time (task-clock) is always counted on Linux.
	off := get(t, ctx, "greyed-out counters", chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll(%s)].map((tr) => tr.cells[0].textContent + ": " + tr.title)`, jsString(cellEl(id)+" .countertable tr.off"))))
	t.Logf("counters unavailable here: %d rows, e.g. %q", len(off), append(off, "")[0])
	for _, o := range off {
		if strings.HasSuffix(o, ": ") {
			t.Errorf("greyed-out counter without a reason: %q", o)
		}
	}
	t.Logf("server: %s; counters panel: %s", rowcount, counters)
	screenshot(t, ctx, "notebook-server")

	// Shift+Enter in the editor runs the cell again and moves on.
	do(t, ctx, "Shift+Enter",
		chromedp.Click(cellSel(id, ".cm-content")),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
		chromedp.WaitVisible(cellSel(id, "table.grid tbody tr")),
	)
	timer := text(t, ctx, cellEl(id)+" .timer")
	selected := get(t, ctx, "selected cell", chromedp.Evaluate[string](`cachebookApp.nb.selected.id`))
	if selected == id {
		t.Errorf("Shift+Enter did not advance the selection")
	}
	if !strings.Contains(timer, "server") {
		t.Errorf("timer %q does not say where the cell ran", timer)
	}
	// Two runs: the comparison chart of the cell's recent runs appears.
	do(t, ctx, "recent-runs chart", chromedp.WaitVisible(cellSel(id, ".chart canvas")))
	if title := text(t, ctx, cellEl(id)+" .chart .paneltitle"); !strings.Contains(title, "recent runs") {
		t.Errorf("chart title %q", title)
	}

	// The large-font mode for projectors.
	do(t, ctx, "large font", chromedp.Click(chromedp.CSS("#large")))
	if !get(t, ctx, "large font on", chromedp.Evaluate[bool](`document.body.classList.contains("large")`)) {
		t.Error("the Aa button did not switch to large fonts")
	}
	screenshot(t, ctx, "large-font")
	do(t, ctx, "normal font", chromedp.Click(chromedp.CSS("#large")))
}

// TestLatencyChart runs the lesson's latency cell (limited to small
// working sets to stay quick) and wants the uPlot chart of the curve.
func TestLatencyChart(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := get(t, ctx, "find the latency cell", chromedp.Evaluate[string](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.kind === "latency");
		if (!c) return "";
		c.setAttr("max", "2M");
		return c.id;
	})()`))
	if id == "" {
		t.Skip("the first lesson has no latency cell")
	}
	do(t, ctx, "run the latency cell",
		chromedp.Click(cellSel(id, "button.run")),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
		chromedp.WaitVisible(cellSel(id, ".chart.measurement canvas")),
		chromedp.ScrollIntoView(cellSel(id, ".chart.measurement")),
	)
	title := text(t, ctx, cellEl(id)+" .chart.measurement .paneltitle")
	if !strings.Contains(title, "latency") {
		t.Errorf("chart title %q", title)
	}
	legend := text(t, ctx, cellEl(id)+" .chart.measurement .u-legend")
	t.Logf("latency chart legend: %s", legend)
	screenshot(t, ctx, "latency")
}

func TestErrorMarkedInEditor(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := setCell(t, ctx, "SELECT UserID,\n       NoSuchColumn\nFROM hits")
	do(t, ctx, "Ctrl+Enter runs a cell with an unknown column",
		chromedp.Click(cellSel(id, ".cm-content")),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(cellSel(id, ".error .ename")),
		chromedp.WaitVisible(cellSel(id, ".cm-lintRange-error")),
	)
	if ename := text(t, ctx, cellEl(id)+" .error .ename"); ename != "SQLError" {
		t.Errorf("error name %q, want SQLError", ename)
	}
	if marked := text(t, ctx, cellEl(id)+" .cm-lintRange-error"); !strings.HasPrefix(marked, "NoSuchColumn") {
		t.Errorf("marked text %q, want the unknown column", marked)
	}
	screenshot(t, ctx, "error")
}

func TestInterrupt(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	// Many statements in one cell: long enough to interrupt, and each
	// statement alone is quick, so a missed interrupt shows as a timeout.
	long := strings.Repeat(query+";\n", 3000)
	id := setCell(t, ctx, long)
	do(t, ctx, "start the long cell with Ctrl+Enter",
		chromedp.Click(cellSel(id, ".cm-line")),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(cellEl(id)+".running")),
	)
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	do(t, ctx, "I,I in command mode interrupts",
		chromedp.KeyEvent("\x1b"), // Escape: leave the editor for command mode
		chromedp.KeyEvent("i"),
		chromedp.KeyEvent("i"),
		chromedp.WaitVisible(cellSel(id, ".error .ename")),
		chromedp.WaitNotPresent(chromedp.CSS(cellEl(id)+".running")),
	)
	t.Logf("in the page: %s", text(t, ctx, cellEl(id)+" .timer"))
	if ename := text(t, ctx, cellEl(id)+" .error .ename"); ename != "Interrupted" {
		t.Errorf("error name %q, want Interrupted", ename)
	}
	t.Logf("interrupt took %v", time.Since(start).Round(time.Millisecond))
}
