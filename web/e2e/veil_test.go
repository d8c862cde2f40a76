package e2e

import (
	"context"
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

// TestPredictionHidesExpectation: a paragraph after a prediction that
// opens with "What to expect." gives the answer (lesson 7: random reads
// "2–10 times slower" than sequential), so it stays hidden until the
// learner commits a guess or skips it, also where a cell of its own
// comes between (lesson 3's spill); the other prediction's stays hidden,
// and a reload keeps the revealed one shown.
func TestPredictionHidesExpectation(t *testing.T) {
	ctx := browser(t)
	shown := func(s string) bool {
		return get(t, ctx, "page text", chromedp.Evaluate[bool](fmt.Sprintf(`document.body.innerText.includes(%s)`, jsString(s))))
	}
	const strideAnswer, mlpAnswer = "2–10 times slower per line", "238 ns per load with one"
	do(t, ctx, "open lesson 7",
		chromedp.Navigate(env.url+"#/lesson/07-access-patterns"),
		chromedp.WaitVisible(cellSel("stride", ".predict input.guessin")),
		chromedp.WaitVisible(chromedp.CSS(".veil.expect")),
	)
	if shown(strideAnswer) || shown(mlpAnswer) {
		t.Error("before the guesses, the lesson shows what to expect")
	}
	if n := get(t, ctx, "expectation veils", chromedp.Evaluate[int](`document.querySelectorAll(".veil.expect").length`)); n != 2 {
		t.Errorf("%d expectation veils, want 2 (stride, mlp)", n)
	}
	do(t, ctx, "scroll to the stride prediction", chromedp.ScrollIntoView(cellSel("stride", ".predict")))
	screenshot(t, ctx, "expectation-veiled")
	do(t, ctx, "commit a stride guess",
		chromedp.SendKeys(cellSel("stride", ".predict input.guessin"), "3"),
		chromedp.Click(cellSel("stride", ".predict button.commit")),
		chromedp.WaitVisible(cellSel("stride", ".predict .locked")),
	)
	if !shown(strideAnswer) {
		t.Error("after the guess, the stride expectation is still hidden")
	}
	if shown(mlpAnswer) {
		t.Error("a stride guess showed the mlp expectation")
	}
	screenshot(t, ctx, "expectation-revealed")
	do(t, ctx, "reload",
		chromedp.Reload(),
		chromedp.WaitVisible(cellSel("stride", ".predict .locked")),
	)
	if !shown(strideAnswer) || shown(mlpAnswer) {
		t.Errorf("after a reload: stride expectation shown %v, mlp %v; want true, false", shown(strideAnswer), shown(mlpAnswer))
	}

	// Lesson 3's spill prediction: its expectation follows a cell of its
	// own, not the prediction; skipping the guess shows it.
	const spillAnswer = "1.4–2.7×, 2.6× in the middle"
	do(t, ctx, "open lesson 3",
		chromedp.Navigate(env.url+"#/lesson/03-radix"),
		chromedp.WaitVisible(cellSel("spill-vs-memory", ".predict")),
		chromedp.WaitVisible(chromedp.CSS(".veil.expect")),
	)
	if shown(spillAnswer) {
		t.Error("before the spill guess, lesson 3 shows what to expect")
	}
	// Clicked from JavaScript: the page's layout may still shift under
	// a pointer click (see clickRun).
	do(t, ctx, "skip the spill guess",
		chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%s).click(), true)`, jsString(cellEl("spill-vs-memory")+" .veil button.skip")))(c, tg)
			return err
		}),
		chromedp.WaitVisible(cellSel("spill-vs-memory", ".reference-label")),
	)
	if !shown(spillAnswer) {
		t.Error("after skipping the spill guess, its expectation is still hidden")
	}
}
