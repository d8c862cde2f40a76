package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// visible is a JavaScript expression that is true when the first element
// matching sel is rendered (not display: none, nor inside such an element).
func visible(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.getClientRects().length > 0; })()`, jsString(sel))
}

// TestPredictionHidesReference opens lesson 1 as a learner: the latency
// cell's prediction asks for a guess and its reference run (numbers,
// chart, label) stays hidden, while cells without a prediction show
// theirs. Committing a guess shows the reference without making the
// read-only lesson unsaved, and the guess survives a reload.
func TestPredictionHidesReference(t *testing.T) {
	ctx := browser(t)
	const id = "latency-curve"
	do(t, ctx, "open lesson 1",
		chromedp.Navigate(env.url+"#/lesson/01-latency"),
		chromedp.WaitVisible(cellSel(id, ".veil")),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="sql"] .reference-label`)),
	)
	for _, sel := range []string{".reference-label", ".chart", "canvas", ".outputs"} {
		if get(t, ctx, "is "+sel+" shown", chromedp.Evaluate[bool](visible(cellEl(id)+" "+sel))) {
			t.Errorf("before the guess, the prediction cell shows its %s", sel)
		}
	}
	if v := text(t, ctx, cellEl(id)+" .veil"); !strings.Contains(v, "hidden until you commit a guess") {
		t.Errorf("veil says %q", v)
	}
	do(t, ctx, "scroll to the prediction", chromedp.ScrollIntoView(cellSel(id, ".predict")))
	screenshot(t, ctx, "prediction-veiled")
	do(t, ctx, "commit a guess",
		chromedp.SendKeys(cellSel(id, ".predict input.guessin"), "120"),
		chromedp.Click(cellSel(id, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(id, ".predict .locked")),
		chromedp.WaitVisible(cellSel(id, ".reference-label")),
		chromedp.WaitVisible(cellSel(id, "canvas")),
	)
	if d := text(t, ctx, ".dirty"); d != "" {
		t.Errorf("committing a guess in a lesson marked it %q", d)
	}
	screenshot(t, ctx, "prediction-revealed")
	do(t, ctx, "reload",
		chromedp.Reload(),
		chromedp.WaitVisible(cellSel(id, ".predict .locked")),
		chromedp.WaitVisible(cellSel(id, ".reference-label")),
	)
	if g := text(t, ctx, cellEl(id)+" .predict .guessval"); g != "120 ns" {
		t.Errorf("guess after reload %q, want 120 ns", g)
	}
	if n := get(t, ctx, "veils", chromedp.Evaluate[int](`document.querySelectorAll(".veil").length`)); n != 0 {
		t.Errorf("%d veils after the reload, want none", n)
	}
}

// TestSkipGuessShowsReference: "Skip the guess" shows one prediction's
// reference run and leaves the lesson's other prediction hidden; the skip
// is remembered across a reload.
func TestSkipGuessShowsReference(t *testing.T) {
	ctx := browser(t)
	do(t, ctx, "open lesson 7",
		chromedp.Navigate(env.url+"#/lesson/07-access-patterns"),
		chromedp.WaitVisible(cellSel("stride", ".veil")),
		chromedp.WaitVisible(cellSel("mlp", ".veil")),
	)
	do(t, ctx, "skip the stride guess",
		chromedp.Click(cellSel("stride", ".veil button.skip")),
		chromedp.WaitVisible(cellSel("stride", ".reference-label")),
	)
	if get(t, ctx, "mlp shown", chromedp.Evaluate[bool](visible(cellEl("mlp")+" .outputs"))) {
		t.Error("skipping one guess showed another prediction's reference")
	}
	do(t, ctx, "reload",
		chromedp.Reload(),
		chromedp.WaitVisible(cellSel("stride", ".reference-label")),
		chromedp.WaitVisible(cellSel("mlp", ".veil")),
	)
	if d := text(t, ctx, ".dirty"); d != "" {
		t.Errorf("skipping a guess marked the lesson %q", d)
	}
}
