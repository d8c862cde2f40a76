package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestRefusedTokenFailsCellAtOnce: after a restart with a new token a
// cell run in the old tab fails at once with the banner's message rather
// than waiting for a connection that will not come.
func TestRefusedTokenFailsCellAtOnce(t *testing.T) {
	if env.bin == "" {
		t.Skip("needs the server binary (not with CACHEBOOK_E2E_URL)")
	}
	ctx := browser(t)
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	nbDir := t.TempDir()
	s1 := startServer(t, addr, "tokenA", nbDir)
	do(t, ctx, "open a lesson",
		chromedp.Navigate("http://"+addr+"/?token=tokenA"),
		chromedp.WaitVisible(chromedp.CSS(".lessons a")),
		chromedp.Click(chromedp.CSS(".lessons a")),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	s1.stop(os.Interrupt)
	startServer(t, addr, "tokenB", nbDir)
	do(t, ctx, "the tab says its token was refused", chromedp.WaitVisible(chromedp.CSS("#serverbanner")))
	banner := text(t, ctx, "#serverbanner")
	id := setCell(t, ctx, "SELECT 1 AS one")
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	do(t, tctx, "the cell fails at once", clickRun(id), chromedp.WaitVisible(cellSel(id, ".error")))
	msg := text(t, ctx, cellEl(id)+" .error")
	if !strings.Contains(msg, "restarted with a new one") || !strings.Contains(banner, "restarted with a new one") {
		t.Errorf("the cell says %q, the banner %q: want the banner's message on the cell", msg, banner)
	}
	if n := get(t, ctx, "running cells", chromedp.Evaluate[int](`document.querySelectorAll(".cell.running, .cell.queued").length`)); n != 0 {
		t.Errorf("%d cells still spin after the refused run", n)
	}
}
