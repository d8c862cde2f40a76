package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestInPageDialogs: save-a-copy of a lesson and a new notebook ask in
// an in-page dialog (no window.prompt): the field has the suggested path
// and the focus, Enter confirms, Escape cancels.
func TestInPageDialogs(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	// A native prompt would block the page: make one fail the test.
	get(t, ctx, "forbid native dialogs", chromedp.Evaluate[bool](`(window.prompt = window.confirm = () => { throw new Error("native dialog"); }, true)`))
	setCell(t, ctx, "SELECT 7 AS seven")
	do(t, ctx, "save a copy",
		chromedp.Click(chromedp.CSS("#save")),
		chromedp.WaitVisible(chromedp.CSS("dialog.dlg[open] input.dlginput")),
	)
	val := get(t, ctx, "the dialog", chromedp.Evaluate[string](`document.activeElement.value + " | " + document.querySelector("dialog.dlg .dlgtitle").textContent`))
	if !strings.HasPrefix(val, "mine/01-latency.md") || !strings.Contains(val, "Save a copy") {
		t.Errorf("save-a-copy dialog: %q (focused value | title)", val)
	}
	screenshot(t, ctx, "dialog-save-copy")
	name := fmt.Sprintf("mine/dlg-%d.md", time.Now().UnixNano()%1e6)
	get(t, ctx, "type a path", chromedp.Evaluate[bool](fmt.Sprintf(`(document.activeElement.value = %q, true)`, name)))
	do(t, ctx, "Enter saves", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(".flash")))
	if msg := text(t, ctx, ".flash"); !strings.Contains(msg, "saved "+name) {
		t.Errorf("save said %q, want saved %s", msg, name)
	}
	do(t, ctx, "open the home page",
		chromedp.Navigate(env.url),
		chromedp.WaitVisible(chromedp.CSS("#newnb")),
		chromedp.Click(chromedp.CSS("#newnb")),
		chromedp.WaitVisible(chromedp.CSS("dialog.dlg[open] input.dlginput")),
		chromedp.KeyEvent(kb.Escape),
		poll(`!document.querySelector("dialog.dlg")`),
	)
	if h := get(t, ctx, "the address", chromedp.Evaluate[string](`location.hash`)); strings.HasPrefix(h, "#/nb/") {
		t.Errorf("Escape on the new-notebook dialog opened %q", h)
	}
}
