package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestModelledCounters runs the article's query with counters=model: the
// cell shows the modelled counters (engine/cachesim) under its table,
// labelled modelled, with the geometry.
func TestModelledCounters(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := setCell(t, ctx, "SET group_by = 'radix'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 5")
	set := fmt.Sprintf(`(() => { const c = cachebookApp.nb.cells.find((c) => c.id === %s); c.setAttr("counters", "model"); c.setAttr("l3", "8M"); return true; })()`, jsString(id))
	get(t, ctx, "set counters=model", chromedp.Evaluate[bool](set))
	do(t, ctx, "run the cell and wait for the modelled counters",
		clickRun(id),
		chromedp.WaitVisible(cellSel(id, "table.grid tbody tr")),
		poll(fmt.Sprintf(`document.querySelector(%s).textContent.includes("modelled (cachesim)")`, jsString(cellEl(id)+" .outputs"))),
	)
	out := text(t, ctx, cellEl(id)+" .outputs")
	for _, want := range []string{"modelled (cachesim), not measured", "geometry: L1d", "L3 8MiB", "modelled DRAM lines read", "sampling"} {
		if !strings.Contains(out, want) {
			t.Errorf("outputs lack %q:\n%s", want, out)
		}
	}
	screenshot(t, ctx, "counters-model")
}
