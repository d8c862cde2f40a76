package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSaveAndReopen edits a lesson, saves it as a notebook (the path the
// Save prompt would ask for is preset), finds it in the notebook list and
// opens it again with the edit and the cell's attributes.
func TestSaveAndReopen(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := setCell(t, ctx, "SELECT 42 AS answer")
	get(t, ctx, "mark the cell and preset the path", chromedp.Evaluate[bool](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.type === "code" && c.kind === "sql");
		c.setAttr("timeout", "10s");
		cachebookApp.nb.source = { path: "mine/e2e.md" };
		return true;
	})()`))
	do(t, ctx, "save",
		chromedp.Click(chromedp.CSS("#save")),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	if msg := text(t, ctx, ".flash"); !strings.Contains(msg, "saved mine/e2e.md") {
		t.Fatalf("save said %q", msg)
	}
	do(t, ctx, "reopen from the notebook list",
		chromedp.Navigate(env.base+"/#/"),
		chromedp.WaitVisible(chromedp.CSS(`.notebooks a[href="#/nb/mine%2Fe2e.md"]`)),
		chromedp.Click(chromedp.CSS(`.notebooks a[href="#/nb/mine%2Fe2e.md"]`)),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
	)
	src := get(t, ctx, "the saved cell", chromedp.Evaluate[string](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.type === "code" && c.kind === "sql");
		return c.source + " | " + JSON.stringify(c.attrs);
	})()`))
	if src != `SELECT 42 AS answer | {"timeout":"10s"}` {
		t.Errorf("reopened cell %q (cell %s edited)", src, id)
	}
}
