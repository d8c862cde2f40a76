package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestOutputsSavedAndReloaded creates a blank notebook, runs an SQL cell
// and a failing one, saves, checks the Markdown file holds the outputs
// (the table as text and as data, the error), reloads the page and wants
// the table and the error shown again without running anything. It also
// checks that the token left the address bar.
func TestOutputsSavedAndReloaded(t *testing.T) {
	if env.notebooks == "" {
		t.Skip("needs the test's own server")
	}
	ctx := browser(t)
	do(t, ctx, "open the home page",
		chromedp.Navigate(env.url),
		chromedp.WaitVisible(chromedp.CSS("#newnb")),
	)
	if q := get(t, ctx, "the address bar", chromedp.Evaluate[string](`location.search + " " + history.length`)); strings.Contains(q, "token") {
		t.Errorf("the token is still in the address bar: %q", q)
	}
	get(t, ctx, "create a blank notebook", chromedp.Evaluate[bool](`(cachebookApp.newNotebook("outputs-e2e.md"), true)`))
	do(t, ctx, "the blank notebook opens",
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	if n := get(t, ctx, "cells", chromedp.Evaluate[int](`cachebookApp.nb.cells.length`)); n != 2 {
		t.Fatalf("blank notebook has %d cells, want a title and an empty SQL cell", n)
	}
	ids := get(t, ctx, "fill two SQL cells", chromedp.Evaluate[[]string](`(() => {
		const nb = cachebookApp.nb;
		const a = nb.cells[1];
		a.view.dispatch({changes: {from: 0, insert: "SELECT 6 * 7 AS answer"}});
		const b = nb.add(a, "code");
		b.view.dispatch({changes: {from: 0, insert: "SELECT nope FROM hits"}});
		return [a.id, b.id];
	})()`))
	do(t, ctx, "run both",
		clickRun(ids[0]),
		chromedp.WaitVisible(cellSel(ids[0], "table.grid tbody tr")),
		clickRun(ids[1]),
		chromedp.WaitVisible(cellSel(ids[1], ".error .ename")),
		chromedp.Click(chromedp.CSS("#save")),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	md, err := os.ReadFile(filepath.Join(env.notebooks, "outputs-e2e.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"```output\nanswer", "42", "```output {mime=application/vnd.cachebook.result+json}\n{\"statements\"", "```output {name=SQLError type=error}"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("saved notebook lacks %q:\n%s", want, md)
		}
	}
	do(t, ctx, "reload the page",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code table.grid tbody tr")),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .error .ename")),
	)
	if got := text(t, ctx, ".notebook .cell.code table.grid tbody"); !strings.Contains(got, "42") {
		t.Errorf("reloaded table %q", got)
	}
	if got := text(t, ctx, ".notebook .cell.code .error .ename"); got != "SQLError" {
		t.Errorf("reloaded error %q", got)
	}
	// Saving again without running gives the same file.
	get(t, ctx, "save again", chromedp.Evaluate[bool](`(document.querySelectorAll(".flash").forEach((e) => e.remove()), cachebookApp.save(), true)`))
	do(t, ctx, "saved again", chromedp.WaitVisible(chromedp.CSS(".flash")))
	md2, _ := os.ReadFile(filepath.Join(env.notebooks, "outputs-e2e.md"))
	if string(md2) != string(md) {
		t.Errorf("second save changed the file:\n%s\n---\n%s", md, md2)
	}
}
