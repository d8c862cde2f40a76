package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestReferenceOutputsShown opens lesson 1 and, before running anything
// (but after skipping the latency cell's guess), wants its reference outputs: the latency curve and the SQL table, each
// under a "reference run on …" label. Running the SQL cell replaces its
// reference output with its own; the latency cell keeps its.
func TestReferenceOutputsShown(t *testing.T) {
	ctx := browser(t)
	do(t, ctx, "open lesson 1",
		chromedp.Navigate(env.url+"#/lesson/01-latency"),
		// The latency cell has a prediction: its reference run shows once
		// the learner skips (or commits) the guess (veil_test.go).
		chromedp.Click(chromedp.CSS(`.notebook .cell[data-kind="latency"] .veil button.skip`)),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="latency"] .reference-label`)),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="latency"] .chart.measurement canvas`)),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	label := text(t, ctx, `.notebook .cell[data-kind="latency"] .reference-label`)
	for _, want := range []string{"reference run on ", "cores", "counters:"} {
		if !strings.Contains(label, want) {
			t.Errorf("label %q lacks %q", label, want)
		}
	}
	id := get(t, ctx, "the SQL cell", chromedp.Evaluate[string](`document.querySelector('.notebook .cell[data-kind="sql"]').dataset.cell`))
	if n := get(t, ctx, "reference table", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" .reference-label, "+cellEl(id)+" table.grid")))); n != 2 {
		t.Fatalf("the SQL cell shows %d of its reference label and table, want both", n)
	}
	do(t, ctx, "scroll to the latency cell", chromedp.ScrollIntoView(chromedp.CSS(`.notebook .cell[data-kind="latency"] .reference-label`)))
	screenshot(t, ctx, "reference-outputs")
	do(t, ctx, "run the SQL cell",
		clickRun(id),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
		chromedp.WaitVisible(cellSel(id, "table.grid")),
	)
	if n := get(t, ctx, "labels left", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" .reference-label")))); n != 0 {
		t.Errorf("the SQL cell still shows the reference label after its own run")
	}
	if n := get(t, ctx, "latency label", chromedp.Evaluate[int](`document.querySelectorAll('.notebook .cell[data-kind="latency"] .reference-label').length`)); n != 1 {
		t.Errorf("the latency cell lost its reference output")
	}
}
