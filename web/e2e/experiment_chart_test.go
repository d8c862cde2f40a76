package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestExperimentChart runs lesson 7's stride experiment with small
// parameters, on the server and then in WebAssembly, and wants its chart
// drawn as an SVG with one group of bars per series, axis titles and a
// legend naming the series.
func TestExperimentChart(t *testing.T) {
	ctx := browser(t)
	do(t, ctx, "open lesson 7",
		chromedp.Navigate(env.url+"#/lesson/07-access-patterns"),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="experiment"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	id := get(t, ctx, "the stride cell", chromedp.Evaluate[string](
		`document.querySelector('.notebook .cell[data-kind="experiment"]').dataset.cell`))
	setSource(t, ctx, id, "stride\nsize=1MiB patterns=sequential,random sample=2ms reps=1")
	modes := []string{"server"}
	if env.wasm {
		modes = append(modes, "wasm")
	}
	for _, mode := range modes {
		if mode == "wasm" {
			do(t, ctx, "switch to WebAssembly",
				chromedp.SetValue(chromedp.CSS("#runmode"), "wasm"),
				chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
					_, err := chromedp.Evaluate[bool](`document.querySelector("#runmode").dispatchEvent(new Event("change"))`)(c, tg)
					return err
				}),
				chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="in browser"][data-kernel="idle"]`)),
			)
		}
		where := "server"
		if mode == "wasm" {
			where = "WebAssembly"
		}
		do(t, ctx, "run the stride experiment ("+mode+")",
			clickRun(id),
			poll(fmt.Sprintf(`(() => { const t = document.querySelector(%s); return t && t.textContent.includes("last run") && t.textContent.includes(%s); })()`,
				jsString(cellEl(id)+" .timer"), jsString(where))),
		)
		if n := get(t, ctx, "errors", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" .error")))); n > 0 {
			t.Fatalf("%s: stride cell failed: %s", mode, text(t, ctx, cellEl(id)+" .error"))
		}
		do(t, ctx, "chart ("+mode+")", chromedp.WaitVisible(cellSel(id, ".chart.measurement svg.xchart")),
			chromedp.ScrollIntoView(cellSel(id, ".chart.measurement svg.xchart")))
		bars := get(t, ctx, "bars", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" svg.xchart g.series g.s rect"))))
		if bars != 2 {
			t.Errorf("%s: %d bars, want 2 (sequential, random)", mode, bars)
		}
		chart := text(t, ctx, cellEl(id)+" .chart.measurement")
		for _, want := range []string{"Time per cache line", "ns per line", "pattern", "sequential", "random", "4 KiB pages"} {
			if !strings.Contains(chart, want) {
				t.Errorf("%s: chart lacks %q:\n%s", mode, want, chart)
			}
		}
		if strings.Contains(chart, "NaN") || strings.Contains(chart, "undefined") {
			t.Errorf("%s: chart prints a missing value:\n%s", mode, chart)
		}
		screenshot(t, ctx, "experiment-chart-"+mode)
	}
}

// TestExperimentChartFromTable: an experiment without a chart of its own
// (false-sharing) gets bars drawn from its first table, one per row.
func TestExperimentChartFromTable(t *testing.T) {
	ctx := browser(t)
	do(t, ctx, "open lesson 5",
		chromedp.Navigate(env.url+"#/lesson/05-contention"),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="experiment"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	id := get(t, ctx, "the false-sharing cell", chromedp.Evaluate[string](
		`document.querySelector('.notebook .cell[data-kind="experiment"]').dataset.cell`))
	setSource(t, ctx, id, "false-sharing\nduration=5ms reps=1")
	get(t, ctx, "clear the timer", chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%s).textContent = "", true)`, jsString(cellEl(id)+" .timer"))))
	do(t, ctx, "run the false-sharing experiment",
		clickRun(id),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
	)
	if n := get(t, ctx, "errors", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" .error")))); n > 0 {
		t.Fatalf("false-sharing cell failed: %s", text(t, ctx, cellEl(id)+" .error"))
	}
	do(t, ctx, "chart", chromedp.WaitVisible(cellSel(id, ".chart.measurement svg.xchart")),
		chromedp.ScrollIntoView(cellSel(id, ".chart.measurement svg.xchart")))
	bars := get(t, ctx, "bars", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" svg.xchart g.series g.s rect"))))
	rows := get(t, ctx, "table rows", chromedp.Evaluate[int](fmt.Sprintf(`cachebookApp.nb.cells.find((c) => c.id === %s).measured.experiment.tables[0].rows.length`, jsString(id))))
	if bars == 0 || bars != rows {
		t.Errorf("%d bars for a first table of %d rows", bars, rows)
	}
	chart := text(t, ctx, cellEl(id)+" .chart.measurement")
	for _, want := range []string{"first table", "CPU ns/op", "packed"} {
		if !strings.Contains(chart, want) {
			t.Errorf("chart lacks %q:\n%s", want, chart)
		}
	}
	screenshot(t, ctx, "experiment-chart-from-table")
}

// TestExperimentLineChart: the mlp experiment's chart is a line over a
// log x axis: one polyline with a marker per chain count.
func TestExperimentLineChart(t *testing.T) {
	ctx := browser(t)
	do(t, ctx, "open lesson 7",
		chromedp.Navigate(env.url+"#/lesson/07-access-patterns"),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="experiment"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	id := get(t, ctx, "an experiment cell", chromedp.Evaluate[string](
		`document.querySelector('.notebook .cell[data-kind="experiment"]').dataset.cell`))
	setSource(t, ctx, id, "mlp\nsize=2MiB chains=1,2,4 sample=2ms reps=1")
	get(t, ctx, "clear the timer", chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%s).textContent = "", true)`, jsString(cellEl(id)+" .timer"))))
	do(t, ctx, "run the mlp experiment",
		clickRun(id),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
	)
	if n := get(t, ctx, "errors", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" .error")))); n > 0 {
		t.Fatalf("mlp cell failed: %s", text(t, ctx, cellEl(id)+" .error"))
	}
	do(t, ctx, "chart", chromedp.WaitVisible(cellSel(id, ".chart.measurement svg.xchart polyline")),
		chromedp.ScrollIntoView(cellSel(id, ".chart.measurement svg.xchart")))
	lines := get(t, ctx, "lines", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" svg.xchart g.series g.s polyline"))))
	points := get(t, ctx, "points", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" svg.xchart g.series g.s path"))))
	if lines < 1 || points != 3*lines {
		t.Errorf("%d lines with %d points, want 3 points a line", lines, points)
	}
	chart := text(t, ctx, cellEl(id)+" .chart.measurement")
	for _, want := range []string{"independent chains", "ns per load"} {
		if !strings.Contains(chart, want) {
			t.Errorf("chart lacks %q:\n%s", want, chart)
		}
	}
	screenshot(t, ctx, "experiment-line-chart")
}
