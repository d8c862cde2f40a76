package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// predictNotebook has one cell with a prediction: the ratio of a naive to
// a radix GROUP BY, run side by side in one cell. Its check text carries
// markup that the sanitiser must remove.
const predictNotebook = "# Predict then run\n\n" +
	"Guess first, then run the cell.\n\n" +
	`<!-- cachebook: {"id": "naive-vs-radix", "predict": {"question": "How many times as long as the radix query will the naive one take?", ` +
	`"unit": "×", "measure": "elapsed(2) / elapsed(3)", "article": {"value": 1.33, "source": "Pivot, 17.6 M groups"}, ` +
	`"check": "When the naive table fits in L3 expect **0.7–1.0×**; several times the L3, **1.1–2×**. <img src=x onerror=alert(1)>"}} -->` + "\n" +
	"```sql\nSELECT min(UserID) FROM hits;\nSET group_by = 'naive';\n" + top3 + ";\nSET group_by = 'radix';\n" + top3 + "\n```\n"

// top3 is short enough that the whole cell fits in the screenshot.
const top3 = "SELECT UserID, count(*) AS c FROM hits GROUP BY UserID ORDER BY c DESC, UserID LIMIT 3"

// TestPredictionGuessRunReload types a guess into a prediction cell,
// commits it, runs the cell, checks that the result compares the guess
// with the measurement and the article's figure, saves, and wants the
// guess and the comparison back after a reload.
func TestPredictionGuessRunReload(t *testing.T) {
	if env.notebooks == "" {
		t.Skip("needs the test's own server")
	}
	ctx := browser(t)
	const id = "naive-vs-radix"
	path := openPlanted(t, ctx, "predict-e2e.md", predictNotebook, cellSel(id, ".predict input.guessin"))
	if q := text(t, ctx, cellEl(id)+" .predict .question"); !strings.Contains(q, "How many times as long") {
		t.Errorf("question %q", q)
	}
	do(t, ctx, "an empty guess is refused",
		chromedp.Click(cellSel(id, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(id, ".predict .perr")),
	)
	do(t, ctx, "type and commit a guess",
		chromedp.SendKeys(cellSel(id, ".predict input.guessin"), "1.5"),
		chromedp.Click(cellSel(id, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(id, ".predict .locked")),
	)
	if g := text(t, ctx, cellEl(id)+" .predict .guessval"); g != "1.50×" {
		t.Errorf("locked guess %q, want 1.50×", g)
	}
	do(t, ctx, "run the cell",
		clickRun(id),
		chromedp.WaitVisible(cellSel(id, ".prediction .pvalues")),
	)
	checkComparison := func(when string) {
		t.Helper()
		vals := text(t, ctx, cellEl(id)+" .prediction .pvalues")
		for _, want := range []string{"your guess1.50×", "measured here", "article (Pivot, 17.6 M groups)1.33×"} {
			if !strings.Contains(vals, want) {
				t.Errorf("%s: comparison %q lacks %q", when, vals, want)
			}
		}
		if strings.Contains(vals, "measured here—") {
			t.Errorf("%s: no measured value: %q", when, vals)
		}
		marks := get(t, ctx, "number line marks", chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(cellEl(id)+" .prediction .pline .pmark")+`).length`))
		if marks != 3 {
			t.Errorf("%s: %d marks on the number line, want 3", when, marks)
		}
		check := get(t, ctx, "check HTML", chromedp.Evaluate[string](`document.querySelector(`+jsString(cellEl(id)+" .prediction .pcheck")+`).innerHTML`))
		if !strings.Contains(check, "<strong>0.7–1.0×</strong>") || strings.Contains(check, "onerror") || strings.Contains(check, "<script") {
			t.Errorf("%s: check text not rendered and sanitised: %q", when, check)
		}
	}
	checkComparison("after the run")
	// A taller viewport shows the whole cell: the locked guess above the
	// code, the comparison below the results.
	do(t, ctx, "a taller viewport", chromedp.EmulateViewport(1280, 1180))
	get(t, ctx, "show the cell", chromedp.Evaluate[bool](`(document.querySelector(`+jsString(cellEl(id))+`).scrollIntoView({block: "start"}), true)`))
	screenshot(t, ctx, "prediction")
	do(t, ctx, "the usual viewport", chromedp.EmulateReset())
	get(t, ctx, "save", chromedp.Evaluate[bool](`(document.querySelector("#save").click(), true)`))
	do(t, ctx, "saved", chromedp.WaitVisible(chromedp.CSS(".flash")))
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"guess":{"at":"`, `"value":1.5}`, "mime=application/vnd.cachebook.prediction+json", `"measure":"elapsed(2) / elapsed(3)"`} {
		if !strings.Contains(string(md), want) {
			t.Errorf("saved notebook lacks %q:\n%s", want, md)
		}
	}
	do(t, ctx, "reload the page",
		chromedp.Reload(),
		chromedp.WaitVisible(cellSel(id, ".predict .locked")),
		chromedp.WaitVisible(cellSel(id, ".prediction .pvalues")),
	)
	if g := text(t, ctx, cellEl(id)+" .predict .guessval"); g != "1.50×" {
		t.Errorf("guess after reload %q, want 1.50×", g)
	}
	checkComparison("after the reload")
	// The guess can be changed explicitly; the new one is what the next
	// run is sent with.
	do(t, ctx, "change the guess",
		chromedp.Click(cellSel(id, ".predict button.change")),
		chromedp.WaitVisible(cellSel(id, ".predict input.guessin")),
		chromedp.SetValue(cellSel(id, ".predict input.guessin"), ""),
		chromedp.SendKeys(cellSel(id, ".predict input.guessin"), "0.8"),
		chromedp.Click(cellSel(id, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(id, ".predict .locked")),
	)
	if g := get(t, ctx, "the cell's guess", chromedp.Evaluate[float64](`cachebookApp.nb.cells.find((c) => c.id === "naive-vs-radix").meta.guess.value`)); g != 0.8 {
		t.Errorf("changed guess %v, want 0.8", g)
	}
}

// TestPredictionInBrowser runs lesson 3's side-by-side cell in the
// WebAssembly kernel: the prediction reaches it, and the comparison shows
// a measured ratio.
func TestPredictionInBrowser(t *testing.T) {
	if !env.wasm {
		t.Skipf("no WebAssembly build: %s", env.wasmErr)
	}
	ctx := browser(t)
	const id = "naive-vs-radix"
	do(t, ctx, "open lesson 3 in the browser",
		chromedp.Navigate(env.url+"#/lesson/03-radix"),
		chromedp.WaitVisible(cellSel(id, ".predict input.guessin")),
		chromedp.SetValue(chromedp.CSS("#runmode"), "wasm"),
		chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.querySelector("#runmode").dispatchEvent(new Event("change"))`)(c, tg)
			return err
		}),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="in browser"]`)),
		chromedp.SendKeys(cellSel(id, ".predict input.guessin"), "1.2"),
		chromedp.Click(cellSel(id, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(id, ".predict .locked")),
		clickRun(id),
		chromedp.WaitVisible(cellSel(id, ".prediction .pvalues")),
	)
	vals := text(t, ctx, cellEl(id)+" .prediction .pvalues")
	if !strings.Contains(vals, "your guess1.20×") || strings.Contains(vals, "measured here—") || !strings.Contains(vals, "1.33×") {
		t.Errorf("comparison in the browser %q", vals)
	}
	if where := text(t, ctx, cellEl(id)+" .timer"); !strings.Contains(where, "WebAssembly") {
		t.Errorf("the cell did not run in the browser: %q", where)
	}
}

// TestPredictionChoice picks one of a prediction's choices and wants the
// result to mark the guessed and the measured choice.
func TestPredictionChoice(t *testing.T) {
	if env.notebooks == "" {
		t.Skip("needs the test's own server")
	}
	md := "# Choice\n\n" + `<!-- cachebook: {"id": "rows", "predict": {"question": "How many rows has hits?", ` +
		`"choices": ["under 10,000", "10,000 to 1 million", "over 1 million"], "bounds": [10000, 1000000], "measure": "value(1, n)"}} -->` +
		"\n```sql\nSELECT count(*) AS n FROM hits\n```\n"
	ctx := browser(t)
	const id = "rows"
	openPlanted(t, ctx, "choice-e2e.md", md, cellSel(id, ".predict select.guessin"))
	do(t, ctx, "choose, commit and run",
		chromedp.SetValue(cellSel(id, ".predict select.guessin"), "under 10,000"),
		chromedp.Click(cellSel(id, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(id, ".predict .locked")),
		clickRun(id),
		chromedp.WaitVisible(cellSel(id, ".prediction .pchoices")),
	)
	guessed := text(t, ctx, cellEl(id)+" .pchoices li.guessed .choice")
	measured := text(t, ctx, cellEl(id)+" .pchoices li.measured")
	if guessed != "under 10,000" || !strings.Contains(measured, "10,000 to 1 million") || !strings.Contains(measured, "measured 100,000") {
		t.Errorf("guessed %q, measured %q", guessed, measured)
	}
}

// openPlanted writes md as the notebook name in the test server's
// notebooks folder, opens it, and waits for ready and a connected kernel.
// It returns the file's path.
func openPlanted(t *testing.T, ctx context.Context, name, md string, ready chromedp.CSS) string {
	t.Helper()
	path := filepath.Join(env.notebooks, name)
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the notebook "+name,
		chromedp.Navigate(env.url),
		chromedp.WaitVisible(chromedp.CSS("#newnb")),
		chromedp.Navigate(env.base+"/#/nb/"+name),
		chromedp.WaitVisible(ready),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	return path
}
