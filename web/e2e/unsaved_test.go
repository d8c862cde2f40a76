package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestUnsavedEditsWarn edits a lesson and then tries to leave it for the
// lesson list: the page asks first. Dismissing the question keeps the
// notebook and the edit; accepting it leaves.
func TestUnsavedEditsWarn(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := setCell(t, ctx, "SELECT 'unsaved' AS edit")
	var mu sync.Mutex
	var asked []string
	accept := false
	opening := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for e, err := range opening {
			if err != nil {
				return
			}
			mu.Lock()
			asked = append(asked, e.Message)
			ok := accept
			mu.Unlock()
			go chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: ok})
				return err
			}))
		}
	}()
	leave := func() {
		t.Helper()
		get(t, ctx, "go to the lesson list", chromedp.Evaluate[bool](`(location.hash = "#/", true)`))
	}
	leave()
	do(t, ctx, "the question was answered", poll(`document.querySelector(".notebook") !== null && location.hash !== "#/"`))
	mu.Lock()
	n := len(asked)
	mu.Unlock()
	if n != 1 || !strings.Contains(asked[0], "unsaved") {
		t.Fatalf("the page asked %q before leaving unsaved edits", asked)
	}
	src := get(t, ctx, "the edit", chromedp.Evaluate[string](`cachebookApp.nb.cells.find((c) => c.id === `+jsString(id)+`).source`))
	if src != "SELECT 'unsaved' AS edit" {
		t.Errorf("the edit is gone: %q", src)
	}
	mu.Lock()
	accept = true
	mu.Unlock()
	leave()
	do(t, ctx, "accepting leaves", chromedp.WaitVisible(chromedp.CSS(".lessons a")))
}
