package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
		if note := text(t, ctx, cellEl(id)+" .chart.measurement"); strings.Contains(note, "NaN") || strings.Contains(note, "undefined") {
			t.Errorf("%s chart prints a missing value: %q", tt.kind, note)
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

// TestBandwidthBarsSideBySide runs a bandwidth cell with 1 and 2 threads
// and reads the chart's pixels: the 1-thread (blue) and 2-thread (red)
// bars must stand side by side, not on top of each other.
func TestBandwidthBarsSideBySide(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := get(t, ctx, "add a cell", chromedp.Evaluate[string](`(() => {
		const nb = cachebookApp.nb;
		const c = nb.add(nb.cells[nb.cells.length - 1], "code");
		c.setKind("bandwidth");
		return c.id;
	})()`))
	setSource(t, ctx, id, "bytes=1M threads=1,2 ops=read reps=1")
	do(t, ctx, "run the bandwidth cell",
		clickRun(id),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("last run")`, jsString(cellEl(id)+" .timer"))),
		chromedp.WaitVisible(cellSel(id, ".chart.measurement canvas")),
		chromedp.ScrollIntoView(cellSel(id, ".chart.measurement")),
	)
	var px []int
	for try := 0; try < 20; try++ {
		px = get(t, ctx, "read the chart's pixels", chromedp.Evaluate[[]int](fmt.Sprintf(`(() => {
			const c = document.querySelector(%s);
			const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
			const blue = new Set(), red = new Set();
			for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) {
				const i = 4 * (y * c.width + x), r = d[i], g = d[i + 1], b = d[i + 2];
				// The palette's first two colours (Okabe–Ito blue #0072B2, orange #E69F00).
				if (b > 150 && r < 60 && g > 80 && g < 150) blue.add(x);
				if (r > 200 && g > 130 && g < 190 && b < 60) red.add(x);
			}
			return [blue.size, red.size, [...blue].filter((x) => red.has(x)).length];
		})()`, jsString(cellEl(id)+" .chart.measurement canvas"))))
		if px[0] > 0 && px[1] > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("blue columns %d, orange columns %d, both %d", px[0], px[1], px[2])
	if px[0] == 0 || px[1] == 0 {
		t.Fatalf("chart shows no bars of one series: %v", px)
	}
	if px[2]*5 > min(px[0], px[1]) {
		t.Errorf("1- and 2-thread bars overlap in %d of %d/%d pixel columns", px[2], px[0], px[1])
	}
}
