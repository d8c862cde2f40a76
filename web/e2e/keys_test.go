package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestKeysTableInBrowser runs the first two cells of lessons 2 (GROUP BY
// s, then k) and 3 (naive, then radix) in WebAssembly: the browser
// generates the keys table itself, sized from the level its latency probe
// measures (the OS's L3 is assumed there) within its small heap, and says
// so in the cell output. The timings are logged (the
// browser's timer is coarse; the direction is asserted by the Direction
// tests in kernel/sizing).
func TestKeysTableInBrowser(t *testing.T) {
	if !env.wasm {
		t.Skipf("no WebAssembly build: %s", env.wasmErr)
	}
	for _, lesson := range []string{"02-waiting", "03-radix"} {
		t.Run(lesson, func(t *testing.T) { keysInBrowser(t, lesson) })
	}
}

func keysInBrowser(t *testing.T, lesson string) {
	ctx := browser(t)
	do(t, ctx, "open "+lesson+" in WebAssembly",
		chromedp.Navigate(env.url+"#/lesson/"+lesson),
		chromedp.WaitVisible(chromedp.CSS(`.notebook .cell[data-kind="sql"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
		chromedp.SetValue(chromedp.CSS("#runmode"), "wasm"),
		chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.querySelector("#runmode").dispatchEvent(new Event("change"))`)(c, tg)
			return err
		}),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="in browser"][data-kernel="idle"]`)),
	)
	ids := get(t, ctx, "the naive and radix cells", chromedp.Evaluate[[]string](`[...document.querySelectorAll('.notebook .cell[data-kind="sql"]')].slice(0, 2).map((c) => c.dataset.cell)`))
	var times []string
	for i, id := range ids {
		do(t, ctx, fmt.Sprintf("run cell %d in the browser", i+1),
			clickRun(id),
			poll(fmt.Sprintf(`(() => { const t = document.querySelector(%s); return t.textContent.includes("last run") && t.textContent.includes("WebAssembly"); })()`, jsString(cellEl(id)+" .timer"))),
		)
		out := text(t, ctx, cellEl(id)+" .outputs")
		if strings.Contains(out, "Error") {
			t.Fatalf("cell %d failed in the browser: %s", i+1, out)
		}
		for _, want := range []string{"rows in shuffled order", "distinct keys", "assumed"} {
			if !strings.Contains(out, want) {
				t.Errorf("cell %d output lacks %q: %s", i+1, want, out)
			}
		}
		// The table is the smallest power of two of slots that reaches 4×
		// the last level the probe measured (so 4× to just under 8×: a
		// level of 1.41 MiB gives 8 MiB, 5.66×), or capped by the
		// browser's budget, which the output then says.
		if !strings.Contains(out, "capped") {
			var ratio float64
			at := strings.Index(out, "hash table of k is ")
			if at >= 0 {
				at = strings.Index(out[at:], "= ") + at
			}
			if at < 0 || !strings.HasPrefix(out[at:], "= ") {
				t.Errorf("cell %d output states no ratio to the cache level: %s", i+1, out)
			} else if _, err := fmt.Sscanf(out[at:], "= %f×", &ratio); err != nil || ratio < 4 || ratio >= 8 {
				t.Errorf("cell %d output states neither 4× to 8× the cache level nor the cap (%v, %v): %s", i+1, ratio, err, out)
			}
		}
		if i == 0 {
			t.Logf("browser sizing: %s", out[strings.Index(out, "keys:"):][:min(400, len(out)-strings.Index(out, "keys:"))])
		}
		times = append(times, text(t, ctx, cellEl(id)+" .rowcount"))
	}
	t.Logf("WebAssembly, %s: first cell %s; second %s", lesson, times[0], times[1])
}
