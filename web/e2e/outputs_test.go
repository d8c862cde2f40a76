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

// TestLargeSaveFits saves a notebook whose outputs together are larger
// than one websocket message may be: the save succeeds, says which
// outputs were left out, and the connection stays up.
func TestLargeSaveFits(t *testing.T) {
	if env.notebooks == "" {
		t.Skip("needs the test's own server")
	}
	ctx := browser(t)
	do(t, ctx, "open the home page", chromedp.Navigate(env.url), chromedp.WaitVisible(chromedp.CSS("#newnb")))
	get(t, ctx, "create a blank notebook", chromedp.Evaluate[bool](`(cachebookApp.newNotebook("large-e2e.md"), true)`))
	do(t, ctx, "the blank notebook opens",
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	// Five cells whose last outputs are wide result tables (about 1.2 MB
	// of JSON each, what a cell at the kernel's 1 MiB value cap returns),
	// put in place as a run would record them.
	get(t, ctx, "five cells with wide results", chromedp.Evaluate[bool](`(() => {
		const nb = cachebookApp.nb;
		let prev = nb.cells[1];
		const row = (i) => [String(i), "x".repeat(300), "y".repeat(300), "z".repeat(300), "w".repeat(300)];
		const columns = ["a", "b", "c", "d", "e"].map((name) => ({ name, type: "VARCHAR" }));
		for (let i = 0; i < 5; i++) {
			const c = i === 0 ? prev : nb.add(prev, "code");
			c.view.dispatch({changes: {from: 0, to: c.view.state.doc.length, insert: "SELECT * FROM hits LIMIT 1000 -- " + i}});
			const bundle = { statements: [{ statement: "SELECT * FROM hits LIMIT 1000", columns, rows: [...Array(1000).keys()].map(row), row_count: 1000, truncated: false, elapsed_ns: 1 }] };
			c.start();
			c.onEvent({ kind: "result", bundle });
			c.onEvent({ kind: "done", status: "ok", where: "server" });
			prev = c;
		}
		return true;
	})()`))
	size := get(t, ctx, "the outputs' size", chromedp.Evaluate[int](`new TextEncoder().encode(JSON.stringify(cachebookApp.nb.toJSON())).length`))
	t.Logf("the notebook with its outputs is %d bytes", size)
	if size < 4<<20 {
		t.Fatalf("outputs of %d bytes do not test the limit", size)
	}
	do(t, ctx, "save",
		chromedp.Click(chromedp.CSS("#save")),
		poll(`[...document.querySelectorAll(".flash")].some((e) => e.textContent.startsWith("saved"))`),
	)
	flashes := get(t, ctx, "what the save said", chromedp.Evaluate[string](`[...document.querySelectorAll(".flash")].map((e) => e.textContent).join(" | ")`))
	if !strings.Contains(flashes, "too large to save") {
		t.Errorf("the save did not say it left outputs out: %q", flashes)
	}
	if st, err := os.Stat(filepath.Join(env.notebooks, "large-e2e.md")); err != nil || st.Size() > 8<<20 {
		t.Errorf("saved file: %v, %v", st, err)
	}
	do(t, ctx, "still connected", chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)))
}
