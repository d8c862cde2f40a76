package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// xssNotebook is a notebook that tries to run script in the reader's page:
// an unreferenced footnote definition (goldmark renders it to nothing,
// which once made the page fall back to rendering the source itself, raw
// HTML included), raw HTML in prose, a javascript: link and a saved HTML
// output.
const xssNotebook = `# Innocent

<img src=x onerror="window.__pwned='raw html'">

[click](javascript:window.__pwned='link')

` + "```sql\nSELECT 1\n```\n\n```output {mime=text/html}\n<img src=x onerror=\"window.__pwned='output'\">\n```\n\n" +
	`[^x]: see <img src=x onerror="window.__pwned='footnote'; fetch('/api/notebooks')">
`

// TestNoScriptFromNotebook plants xssNotebook in the notebooks folder,
// opens it, then edits a prose cell into more script and re-renders it; no
// script may run, and the rendered images must have lost their handlers.
// Finally it checks the Content-Security-Policy itself: an inline script
// added to the page does not run.
func TestNoScriptFromNotebook(t *testing.T) {
	if env.notebooks == "" {
		t.Skip("needs the test's own server")
	}
	ctx := browser(t)
	if err := os.WriteFile(filepath.Join(env.notebooks, "xss.md"), []byte(xssNotebook), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the planted notebook",
		chromedp.Navigate(env.url),
		chromedp.WaitVisible(chromedp.CSS(".lessons a")),
		chromedp.Navigate(env.base+"/#/nb/xss.md"),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.markdown .prose")),
	)
	time.Sleep(500 * time.Millisecond) // the broken images fail to load
	pwned := func(when string) {
		t.Helper()
		v := get(t, ctx, "read window.__pwned", chromedp.Evaluate[string](`String(window.__pwned ?? "")`))
		if v != "" {
			t.Fatalf("%s: script from the notebook ran (%s)", when, v)
		}
		handlers := get(t, ctx, "look for event handlers", chromedp.Evaluate[int](
			`[...document.querySelectorAll(".notebook *")].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name) || /javascript:/i.test(a.value))).length`))
		if handlers != 0 {
			t.Fatalf("%s: %d elements in the page carry event handlers or javascript: URLs", when, handlers)
		}
	}
	pwned("after opening")
	if n := get(t, ctx, "the saved HTML output", chromedp.Evaluate[int](`document.querySelectorAll(".notebook .htmlout img").length`)); n != 1 {
		t.Errorf("the saved HTML output was not shown (sanitised): %d images", n)
	}

	// Edited prose is rendered in the page (marked), through the same
	// sanitiser.
	get(t, ctx, "edit a prose cell into script", chromedp.Evaluate[bool](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.type === "markdown");
		c.view.dispatch({changes: {from: 0, to: c.view.state.doc.length, insert:
			"# edited\n\n<img src=y onerror=\"window.__pwned='edited'\">\n\n<script>window.__pwned='script'</script>\n\n<a href=\"javascript:window.__pwned='a'\">x</a>\n\n<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>\n\n[md link](javascript:window.__pwned='mdlink') ![img](javascript:window.__pwned='mdimg')\n"}});
		c.renderProse();
		return true;
	})()`))
	time.Sleep(500 * time.Millisecond)
	pwned("after editing prose")
	if got := text(t, ctx, ".notebook .cell.markdown .prose h1"); !strings.Contains(got, "edited") {
		t.Errorf("edited prose not rendered: %q", got)
	}

	// The CSP: inline script does not run even when inserted by the page.
	ran := get(t, ctx, "inline script under the CSP", chromedp.Evaluate[bool](`(() => {
		const s = document.createElement("script");
		s.textContent = "window.__inline = 1";
		document.body.append(s);
		const i = document.createElement("img");
		i.setAttribute("onerror", "window.__inline = 2");
		i.src = "x:y";
		document.body.append(i);
		return window.__inline !== undefined;
	})()`))
	time.Sleep(300 * time.Millisecond)
	if ran || get(t, ctx, "inline handler under the CSP", chromedp.Evaluate[bool](`window.__inline !== undefined`)) {
		t.Fatal("the Content-Security-Policy let inline script run")
	}
}
