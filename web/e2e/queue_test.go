package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestQueuedCellDoesNotTick runs a long cell and then a second one, which
// waits in the session's queue: the second says it is queued and its timer
// does not run until it starts.
func TestQueuedCellDoesNotTick(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	ids := get(t, ctx, "two SQL cells", chromedp.Evaluate[[]string](`(() => {
		const nb = cachebookApp.nb;
		const a = nb.add(nb.cells[nb.cells.length - 1], "code");
		a.view.dispatch({changes: {from: 0, insert: `+jsString(strings.Repeat(query+";\n", 600))+`}});
		const b = nb.add(a, "code");
		b.view.dispatch({changes: {from: 0, insert: "SELECT 1 AS after"}});
		return [a.id, b.id];
	})()`))
	do(t, ctx, "run the long cell, then the second",
		clickRun(ids[0]),
		chromedp.WaitVisible(chromedp.CSS(cellEl(ids[0])+".running")),
		clickRun(ids[1]),
		chromedp.WaitVisible(chromedp.CSS(cellEl(ids[1])+".queued")),
	)
	first := text(t, ctx, cellEl(ids[1])+" .timer")
	time.Sleep(400 * time.Millisecond)
	second := text(t, ctx, cellEl(ids[1])+" .timer")
	if !strings.Contains(first, "queued") || first != second || strings.Contains(second, "⏱") {
		t.Errorf("queued cell's timer: %q then %q; want a steady \"queued\"", first, second)
	}
	do(t, ctx, "the second cell runs after the first",
		chromedp.WaitVisible(cellSel(ids[1], "table.grid tbody tr")),
	)
	if timer := text(t, ctx, cellEl(ids[1])+" .timer"); !strings.Contains(timer, "last run") {
		t.Errorf("finished cell's timer %q", timer)
	}
}
