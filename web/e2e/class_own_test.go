package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cachebook/web"
)

// TestClassOwnMachineInBrowser: a learner presses "Measure my machine",
// runs lesson 1's latency cell (kept small) in the browser's own kernel,
// and the class view gets the curve marked own machine, with the
// browser's description and the curve's plateaus.
func TestClassOwnMachineInBrowser(t *testing.T) {
	if !env.wasm {
		t.Skipf("no WebAssembly build: %s", env.wasmErr)
	}
	base := classServer(t)
	ctx := browser(t)
	do(t, ctx, "join and open lesson 1",
		chromedp.Navigate(base+"/join?code=CACHE7"),
		chromedp.WaitVisible(chromedp.CSS("#joinname")),
		chromedp.SendKeys(chromedp.CSS("#joinname"), "Barbara"),
		chromedp.Click(chromedp.CSS("#joinbtn")),
		chromedp.WaitVisible(chromedp.CSS("#classbanner #measuremine")),
		chromedp.Navigate(fmt.Sprintf("%s/?hits_rows=%d#/lesson/01-latency", base, e2eRows)),
		chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code")),
		chromedp.Click(chromedp.CSS("#measuremine")),
		poll(`cachebookApp.kernel.kind === "wasm"`),
	)
	const pc = "latency-curve"
	if !get(t, ctx, "shrink the latency cell", chromedp.Evaluate[bool](`(() => {
		const c = cachebookApp.nb.cells.find((c) => c.id === "latency-curve");
		if (!c) return false;
		c.setAttr("max", "4M");
		c.setAttr("reps", "1");
		return true;
	})()`)) {
		t.Fatal("lesson 1 has no latency-curve cell")
	}
	// The browser's kernel starts (and makes its hits table) first.
	v, _ := baseCtx.Load(t)
	lctx, cancel := context.WithTimeout(v.(context.Context), 3*time.Minute)
	defer cancel()
	start := time.Now()
	do(t, lctx, "run the latency cell in the browser", clickRun(pc), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](`[...document.querySelectorAll(".flash")].some((f) => f.textContent.includes("your machine's curve is on the class view"))`,
			chromedp.WithPollingTimeout(170*time.Second))(ctx, tg)
		return err
	}))
	t.Logf("the browser measured and sent its curve in %v", time.Since(start).Round(time.Millisecond))
	var snap web.ClassSnapshot
	req, _ := http.NewRequest("GET", base+"/api/class", nil)
	req.Header.Set("Authorization", "token secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&snap)
	resp.Body.Close()
	if err != nil || len(snap.Learners) != 1 || snap.Learners[0].Own == nil {
		t.Fatalf("no own-machine curve in the class view: %v %+v", err, snap.Learners)
	}
	own := snap.Learners[0].Own
	if len(own.Curve) < 3 || own.Machine.Cores == 0 || !strings.Contains(own.Machine.Browser, "Chrom") || len(own.Machine.Plateaus) == 0 {
		t.Errorf("own machine %+v, %d points", own.Machine, len(own.Curve))
	}
	if len(snap.Learners[0].Curve) != 0 {
		t.Errorf("the browser's run also shows as a server curve")
	}
	t.Logf("own machine: %+v", own.Machine)
}
