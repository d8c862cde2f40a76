package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// explainGroupBy's plan names the GROUP BY strategy the session's
// settings give: "strategy: auto" by default.
const explainGroupBy = "EXPLAIN SELECT UserID, count(*) FROM hits GROUP BY UserID"

// TestLessonsAreIsolated: a setting made in one lesson is not visible in
// the next lesson opened in the same tab (the same kernel session). The
// check first sees the setting in effect within its own lesson, so the
// test would catch a leak.
func TestLessonsAreIsolated(t *testing.T) {
	ctx := browser(t)
	runIn := func(lesson, src string) string {
		t.Helper()
		do(t, ctx, "open "+lesson,
			chromedp.Navigate(env.url+"#/lesson/"+lesson),
			chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
			chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
		)
		return runSQL(t, ctx, src)
	}
	if out := runIn("03-radix", "SET group_by = 'naive';\n"+explainGroupBy); !strings.Contains(out, "strategy: naive") {
		t.Fatalf("lesson 3 after SET group_by = 'naive': %s", out)
	}
	// The same lesson, another cell: the setting persists, as it should.
	if out := runSQL(t, ctx, explainGroupBy); !strings.Contains(out, "strategy: naive") {
		t.Fatalf("the setting did not persist within lesson 3: %s", out)
	}
	get(t, ctx, "forget the edits", chromedp.Evaluate[bool](`(cachebookApp.nb.dirty(false), true)`))
	if out := runIn("04-many-cores", explainGroupBy); !strings.Contains(out, "strategy: auto") {
		t.Errorf("lesson 4 sees lesson 3's SET group_by = 'naive': %s", out)
	}
}

// runSQL puts src (an EXPLAIN) into the open notebook's first SQL cell,
// runs it and returns the cell's output text once the plan is there.
func runSQL(t *testing.T, ctx context.Context, src string) string {
	t.Helper()
	id := setCell(t, ctx, src)
	el := jsString(cellEl(id))
	get(t, ctx, "clear the outputs", chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%s + " .outputs").textContent = "", true)`, el)))
	do(t, ctx, "run "+src,
		clickRun(id),
		poll(fmt.Sprintf(`(() => { const c = document.querySelector(%s); return !c.classList.contains("running") && !c.classList.contains("queued") && c.querySelector(".outputs").textContent.includes("strategy:"); })()`, el)),
	)
	return text(t, ctx, cellEl(id)+" .outputs")
}
