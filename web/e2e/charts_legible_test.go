package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"cachebook/kernel"
)

// recordCanvasText wraps the canvas's fillText so that every text a chart
// draws on a canvas (uPlot's ticks and axis titles, the latency chart's
// band and cache labels) leaves its box, in canvas pixels, on the canvas
// element (__texts, reset when the whole canvas is cleared).
const recordCanvasText = `(() => {
  const P = CanvasRenderingContext2D.prototype;
  const fill = P.fillText, clear = P.clearRect;
  P.clearRect = function (x, y, w, h) {
    if (x <= 0 && y <= 0 && w >= this.canvas.width && h >= this.canvas.height) this.canvas.__texts = [];
    return clear.apply(this, arguments);
  };
  P.fillText = function (s, x, y) {
    s = String(s);
    if (s.trim()) {
      const m = this.measureText(s), t = this.getTransform();
      const l = x - m.actualBoundingBoxLeft, r = x + m.actualBoundingBoxRight;
      const tp = y - m.actualBoundingBoxAscent, b = y + m.actualBoundingBoxDescent;
      const pts = [[l, tp], [r, tp], [l, b], [r, b]].map(([px, py]) => [t.a * px + t.c * py + t.e, t.b * px + t.d * py + t.f]);
      const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
      (this.canvas.__texts ||= []).push({ s, x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys) });
    }
    return fill.apply(this, arguments);
  };
})();`

// labelProblems lists, for every chart on the page, labels whose boxes
// overlap and labels cut by their chart's edge: canvas texts (recorded by
// recordCanvasText) against the canvas, SVG texts (getBBox) against the
// SVG's viewBox, and the class view's histogram labels and titles
// (getBoundingClientRect) against their neighbours and their boxes.
const labelProblems = `(() => {
  const out = [];
  const overlap = (a, b) => a.x0 < b.x1 - 0.5 && b.x0 < a.x1 - 0.5 && a.y0 < b.y1 - 0.5 && b.y0 < a.y1 - 0.5;
  const check = (where, boxes, W, H) => {
    boxes.forEach((a, i) => {
      if (a.x0 < -0.5 || a.y0 < -0.5 || a.x1 > W + 0.5 || a.y1 > H + 0.5) out.push(where + ": " + JSON.stringify(a.s) + " is clipped (" + [a.x0, a.y0, a.x1, a.y1].map(Math.round) + " in " + Math.round(W) + "x" + Math.round(H) + ")");
      for (const b of boxes.slice(i + 1)) if (overlap(a, b)) out.push(where + ": " + JSON.stringify(a.s) + " overlaps " + JSON.stringify(b.s));
    });
  };
  const name = (el) => {
    const c = el.closest("[data-cell], .classpred, #curveplot");
    const t = el.closest(".chart, .classpred, #curveplot");
    const title = t && t.querySelector(".paneltitle, .question");
    return (c ? (c.dataset.cell || c.dataset.pred || c.id) : "?") + (title ? " (" + title.textContent.slice(0, 40) + ")" : "");
  };
  let charts = 0;
  for (const cv of document.querySelectorAll("canvas")) {
    if (!cv.offsetParent) continue;
    charts++;
    check(name(cv) + " canvas", cv.__texts || [], cv.width, cv.height);
    // Thinned, not emptied: the x labels still span most of the axis.
    const u = cv.closest(".uplot");
    const span = u && Number(u.dataset.labelSpan0);
    if (u && !(span >= 0.6)) out.push(name(cv) + ": the x labels span " + span + " of the axis");
  }
  for (const svg of document.querySelectorAll("svg.xchart")) {
    if (!svg.getClientRects().length) continue;
    charts++;
    // Boxes as drawn (rotated titles included), in viewBox units.
    const vb = svg.viewBox.baseVal, sr = svg.getBoundingClientRect();
    const kx = vb.width / sr.width, ky = vb.height / sr.height;
    const boxes = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim()).map((t) => {
      const b = t.getBoundingClientRect();
      return { s: t.textContent, x0: (b.left - sr.left) * kx, y0: (b.top - sr.top) * ky, x1: (b.right - sr.left) * kx, y1: (b.bottom - sr.top) * ky };
    });
    check(name(svg) + " svg", boxes, vb.width, vb.height);
  }
  for (const bars of document.querySelectorAll(".classpred .bars")) {
    charts++;
    const r0 = bars.closest(".classpred").getBoundingClientRect();
    const boxes = [...bars.querySelectorAll(".binlabel, .count")].map((e) => {
      const r = e.getBoundingClientRect();
      // A label wider than its box spills over its neighbour even when
      // its box does not: measure the text.
      const rg = document.createRange();
      rg.selectNodeContents(e);
      const t = rg.getBoundingClientRect();
      return { s: e.textContent, x0: Math.min(r.left, t.left) - r0.left, x1: Math.max(r.right, t.right) - r0.left, y0: Math.min(r.top, t.top) - r0.top, y1: Math.max(r.bottom, t.bottom) - r0.top };
    });
    check(name(bars) + " histogram", boxes, r0.width, r0.height);
  }
  for (const t of document.querySelectorAll(".chart .paneltitle, .classpred .question, .panel .paneltitle, #classname")) {
    if (t.getClientRects().length && t.scrollWidth > t.clientWidth + 1) out.push(name(t) + ": title " + JSON.stringify(t.textContent) + " is cut");
  }
  return { charts, problems: out };
})()`

type labelReport struct {
	Charts   int      `json:"charts"`
	Problems []string `json:"problems"`
}

// checkLabels fails the test with the label problems of the page.
func checkLabels(t *testing.T, ctx context.Context, what string, wantCharts int) {
	t.Helper()
	var r labelReport
	raw := get(t, ctx, "label boxes", chromedp.Evaluate[string](`JSON.stringify(`+labelProblems+`)`))
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	if r.Charts < wantCharts {
		t.Errorf("%s: %d charts checked, want at least %d", what, r.Charts, wantCharts)
	}
	for _, p := range r.Problems {
		t.Errorf("%s: %s", what, p)
	}
}

// recordText installs recordCanvasText in the pages the context opens.
func recordText(t *testing.T, ctx context.Context) {
	do(t, ctx, "record canvas text", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordCanvasText})
		return err
	}))
}

// chartNotebook writes a notebook whose cells carry, as saved outputs, every
// measurement of the lessons' reference runs: each chart kind drawn from
// real data (latency with its plateaus and cache sizes, bandwidth, a
// sweep with its model, experiments with lines on log and linear axes, bars,
// and a chart derived from a table). It returns the notebook's path.
func chartNotebook(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repoRoot(), "lessons", "reference", "*.json"))
	sort.Strings(files)
	var b strings.Builder
	b.WriteString("# Every chart kind\n\n")
	n := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ref struct {
			Cells map[string][]struct {
				Type string                     `json:"type"`
				Data map[string]json.RawMessage `json:"data"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(raw, &ref); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, 0, len(ref.Cells))
		for id := range ref.Cells {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			for _, o := range ref.Cells[id] {
				m, ok := o.Data[kernel.MIMEMeasurement]
				if !ok {
					continue
				}
				var head struct {
					Kind       string `json:"kind"`
					Experiment struct {
						Experiment string `json:"experiment"`
					} `json:"experiment"`
				}
				if json.Unmarshal(m, &head) != nil {
					continue
				}
				src := ""
				if head.Kind == kernel.KindExperiment {
					src = head.Experiment.Experiment + "\n"
				}
				fmt.Fprintf(&b, "```%s\n%s```\n\n```output {mime=%s}\n%s\n```\n\n", head.Kind, src, kernel.MIMEMeasurement, m)
				n++
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d reference measurements found", n)
	}
	name := "every-chart.md"
	if err := os.WriteFile(filepath.Join(env.notebooks, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestChartsLegible draws every chart kind (the lessons' reference
// measurements, as saved outputs of one notebook) at the normal size and
// at the projector size ("Aa"), and wants no two labels of a chart to
// overlap and none cut by the chart's edge.
func TestChartsLegible(t *testing.T) {
	if env.notebooks == "" {
		t.Skip("needs the e2e server's notebook directory (not with CACHEBOOK_E2E_URL)")
	}
	nb := chartNotebook(t)
	ctx := browser(t)
	recordText(t, ctx)
	do(t, ctx, "open the notebook of charts",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(env.url+"#/nb/"+nb),
		chromedp.WaitVisible(chromedp.CSS(".notebook .chart.measurement")),
		poll(`document.querySelectorAll(".notebook .chart.measurement canvas").length >= 4`),
		poll(`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`),
	)
	checkLabels(t, ctx, "normal size", 12)
	for _, size := range []string{"projector", "normal"} {
		do(t, ctx, "switch to the "+size+" size",
			chromedp.Click(chromedp.CSS("#large")),
			poll(fmt.Sprintf(`[...document.querySelectorAll(".notebook .uplot")].every((u) => (Number(u.dataset.textScale) > 1.3) === %v)`, size == "projector")),
			poll(`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`),
		)
		checkLabels(t, ctx, size+" size", 12)
		if size == "projector" {
			for _, kind := range []string{"latency", "sweep", "experiment"} {
				do(t, ctx, "scroll to a "+kind+" chart", chromedp.ScrollIntoView(chromedp.CSS(`.notebook .cell[data-kind="`+kind+`"] .chart.measurement`)))
				screenshot(t, ctx, "charts-projector-"+kind)
			}
			get(t, ctx, "scroll to the bar chart with the most labels", chromedp.Evaluate[bool](`(() => {
				const svgs = [...document.querySelectorAll("svg.xchart")].sort((a, b) => b.querySelectorAll("text").length - a.querySelectorAll("text").length);
				svgs[0].scrollIntoView({ block: "center" });
				return true;
			})()`))
			screenshot(t, ctx, "charts-projector-bars")
		}
	}
}

// TestClassChartsLegible: the class view's latency curves and a numeric
// guess histogram whose bins span two orders of magnitude, at the normal
// and the projector size: no label overlaps another or is cut.
func TestClassChartsLegible(t *testing.T) {
	base := classServer(t)
	ctx := browser(t)
	recordText(t, ctx)
	do(t, ctx, "open the class view",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"/class?token=secret"),
		chromedp.WaitVisible(chromedp.CSS("#roster")),
	)
	perLoad := `{"question":"How many ns per load at the largest working set?","unit":"ns","measure":"points[last].ns"}`
	guesses := []float64{1.5, 4, 12, 40, 110, 150, 200, 230}
	var wg sync.WaitGroup
	errc := make(chan error, len(guesses))
	for i, g := range guesses {
		l := joinClass(t, base, fmt.Sprintf("Learner with a long name %02d", i+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.run(kernel.KindLatency, fmt.Sprintf("min=4K max=%dK ppo=2 reps=1 sample=2ms huge=false seed=%d", 1024<<(i%3), i+1),
				"your-curve", perLoad, fmt.Sprintf(`{"value":%g}`, g))
			if err == nil && r.Status != kernel.StatusOK {
				err = fmt.Errorf("%s: %s %s", l.name, r.Ename, r.Evalue)
			}
			if err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	do(t, ctx, "the curves and the guesses arrive",
		poll(fmt.Sprintf(`document.querySelector("#curveplot").dataset.curves === "%d"`, len(guesses))),
		poll(fmt.Sprintf(`[...document.querySelectorAll(".classpred[data-pred='your-curve'] .count")].reduce((s, e) => s + Number(e.textContent), 0) === %d`, len(guesses))),
		poll(`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`),
	)
	checkLabels(t, ctx, "class view, normal size", 2)
	do(t, ctx, "switch to the projector size",
		chromedp.Click(chromedp.CSS("#large")),
		poll(`document.body.classList.contains("large")`),
		poll(fmt.Sprintf(`document.querySelector("#curveplot").dataset.curves === "%d"`, len(guesses))),
		poll(`new Promise((r) => setTimeout(() => requestAnimationFrame(() => r(true)), 300))`),
	)
	checkLabels(t, ctx, "class view, projector size", 2)
	if n := get(t, ctx, "x labels", chromedp.Evaluate[int](`window.cachebookClass.plot.axes[0]._values.filter(Boolean).length`)); n < 4 {
		t.Errorf("the curves' x axis shows %d labels at the projector size, want at least 4", n)
	}
	do(t, ctx, "scroll to the curves", chromedp.ScrollIntoView(chromedp.CSS("#curveplot")))
	screenshot(t, ctx, "class-projector-curves")
	do(t, ctx, "scroll to the guesses", chromedp.ScrollIntoView(chromedp.CSS(".classpred")))
	screenshot(t, ctx, "class-projector-guesses")
}
