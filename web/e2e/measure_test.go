package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestMeasurementCharts adds bandwidth and sweep cells through the kind
// selector, runs them with small parameters and wants their uPlot charts.
func TestMeasurementCharts(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	tests := []struct {
		kind, params, title string
	}{
		{"bandwidth", "bytes=1M threads=1 ops=read,write reps=1", "bandwidth"},
		{"sweep", "rows=20000 groups=10,1000 strategies=naive,radix reps=1", "GROUP BY"},
	}
	for _, tt := range tests {
		id := get(t, ctx, "add a cell", chromedp.Evaluate[string](`(() => {
			const nb = cachebookApp.nb;
			return nb.add(nb.cells[nb.cells.length - 1], "code").id;
		})()`))
		setSource(t, ctx, id, tt.params)
		do(t, ctx, "run a "+tt.kind+" cell",
			chromedp.SetValue(cellSel(id, "select.kind"), tt.kind),
			chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%s).dispatchEvent(new Event("change"))`, jsString(cellEl(id)+" select.kind")))(c, tg)
				return err
			}),
			clickRun(id),
			poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
		)
		if n := get(t, ctx, "errors", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(cellEl(id)+" .error")))); n > 0 {
			t.Fatalf("%s cell failed: %s", tt.kind, text(t, ctx, cellEl(id)+" .error"))
		}
		do(t, ctx, "chart of the "+tt.kind+" cell",
			chromedp.WaitVisible(cellSel(id, ".chart.measurement canvas")),
			chromedp.ScrollIntoView(cellSel(id, ".chart.measurement")),
		)
		if title := text(t, ctx, cellEl(id)+" .chart.measurement .paneltitle"); !strings.Contains(title, tt.title) {
			t.Errorf("%s chart title %q", tt.kind, title)
		}
		screenshot(t, ctx, tt.kind)
	}
}

// setSource replaces a cell's source.
func setSource(t *testing.T, ctx context.Context, id, src string) {
	t.Helper()
	get(t, ctx, "set the source", chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.id === %s);
		c.view.dispatch({changes: {from: 0, to: c.view.state.doc.length, insert: %s}});
		return true;
	})()`, jsString(id), jsString(src))))
}
