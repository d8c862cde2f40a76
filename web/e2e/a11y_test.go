package e2e

// Accessibility: an axe-core audit (npm's axe-core, installed by
// `make axe` into web/e2e/axe/node_modules) of the home page, a lesson and
// the class view, and the notebook driven from the keyboard alone.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"cachebook/kernel"
)

// axeScript returns axe.min.js ($AXE_CORE, or web/e2e/axe's
// node_modules), or skips the test when it is not installed.
func axeScript(t *testing.T) string {
	t.Helper()
	path := os.Getenv("AXE_CORE")
	if path == "" {
		path = filepath.Join(repoRoot(), "web", "e2e", "axe", "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		msg := fmt.Sprintf("axe-core is not installed (%v): run `make axe` (npm ci in web/e2e/axe) or set AXE_CORE to axe.min.js", err)
		if os.Getenv("CACHEBOOK_E2E_REQUIRE") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return string(b)
}

// axeViolation is one rule axe found broken, with a few of its nodes.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// audit runs axe on the page as it is and returns its violations.
func audit(t *testing.T, ctx context.Context, script, page string) []axeViolation {
	t.Helper()
	res := get(t, ctx, "axe audit of "+page, chromedp.Evaluate[string](script+`;
		axe.run(document, { resultTypes: ["violations"] }).then((r) => JSON.stringify(r.violations.map((v) => ({
			id: v.id, impact: v.impact || "", help: v.help,
			nodes: v.nodes.slice(0, 4).map((n) => n.target.join(" ") + ": " + (n.failureSummary || "").split("\n").slice(1, 2).join(" ")),
		}))))`, chromedp.EvalAwaitPromise))
	var vs []axeViolation
	if err := json.Unmarshal([]byte(res), &vs); err != nil {
		t.Fatalf("axe result of %s: %v", page, err)
	}
	for _, v := range vs {
		t.Logf("%s: axe %s (%s): %s; %d shown: %s", page, v.ID, v.Impact, v.Help, len(v.Nodes), strings.Join(v.Nodes, " | "))
	}
	return vs
}

// serious keeps the serious and critical violations.
func serious(vs []axeViolation) []string {
	var out []string
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			out = append(out, fmt.Sprintf("%s (%s): %s: %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, " | ")))
		}
	}
	return out
}

// TestAccessibilityAudit: axe finds no serious or critical violation on
// the home page, a lesson (with a run cell's output), the class view with
// server and own-machine curves, and the class view's remove dialog.
func TestAccessibilityAudit(t *testing.T) {
	script := axeScript(t)
	ctx := browser(t)
	report := map[string][]string{}
	do(t, ctx, "open the home page", chromedp.Navigate(env.url), chromedp.WaitVisible(chromedp.CSS(".lessons a")))
	report["home page"] = serious(audit(t, ctx, script, "home page"))
	openLesson(t, ctx)
	id := setCell(t, ctx, "SELECT RegionID, count(*) AS n FROM hits GROUP BY RegionID ORDER BY n DESC LIMIT 3")
	do(t, ctx, "run a cell", clickRun(id), chromedp.WaitVisible(cellSel(id, "table.grid")))
	report["lesson"] = serious(audit(t, ctx, script, "lesson"))

	base := classServer(t)
	l := joinClass(t, base, "Ada")
	if r, err := l.run(kernel.KindLatency, "min=4K max=1M ppo=1 reps=1 sample=1ms huge=false", "latency-curve", "", ""); err != nil || r.Status != kernel.StatusOK {
		t.Fatalf("latency on the server: %v %+v", err, r)
	}
	own := joinClass(t, base, "Grace")
	postOwn(t, base, own.cookie)
	// A fresh browser: the lesson's edited cell would hold the navigation
	// (the page asks before leaving unsaved edits).
	ctx = browser(t)
	do(t, ctx, "open the class view", chromedp.Navigate(base+"/class?token=secret"), chromedp.WaitVisible(chromedp.CSS("#rostertable table")))
	do(t, ctx, "the own machine's curve and description show",
		chromedp.WaitVisible(chromedp.CSS(`#curveplot[data-own="1"] canvas`)),
		chromedp.WaitVisible(chromedp.CSS(`#machines table`)),
	)
	if m := text(t, ctx, "#machines table"); !strings.Contains(m, "Grace") || !strings.Contains(m, "Safari 18") || !strings.Contains(m, "8") {
		t.Errorf("own machines table %q", m)
	}
	if r := text(t, ctx, "#rostertable"); !strings.Contains(r, "own machine (8 cores") || !strings.Contains(r, "from own machines") {
		t.Errorf("roster %q does not mark the own-machine curve", r)
	}
	screenshot(t, ctx, "class-own-machine")
	report["class view"] = serious(audit(t, ctx, script, "class view"))
	get(t, ctx, "press remove", chromedp.Evaluate[bool](`(document.querySelector("#rostertable button.remove").click(), true)`))
	do(t, ctx, "the remove dialog opens", chromedp.WaitVisible(chromedp.CSS("dialog.dlg[open] button.dlgok")))
	if f := get(t, ctx, "the dialog's focus", chromedp.Evaluate[string](`document.activeElement.className`)); !strings.Contains(f, "dlgok") {
		t.Errorf("the remove dialog opened with the focus on %q, want its confirming button", f)
	}
	screenshot(t, ctx, "class-remove-dialog")
	report["class view, remove dialog"] = serious(audit(t, ctx, script, "remove dialog"))
	do(t, ctx, "Escape cancels the dialog", chromedp.KeyEvent(kb.Escape), poll(`!document.querySelector("dialog.dlg")`))
	if n := get(t, ctx, "the roster", chromedp.Evaluate[int](`document.querySelectorAll("#rostertable tbody tr").length`)); n != 2 {
		t.Errorf("after cancelling the dialog the roster has %d learners, want 2", n)
	}
	for page, vs := range report {
		if len(vs) > 0 {
			t.Errorf("%s: %d serious or critical accessibility violations:\n%s", page, len(vs), strings.Join(vs, "\n"))
		}
	}
}

// postOwn sends an own-machine latency curve as a learner's page does.
func postOwn(t *testing.T, base, cookie string) {
	t.Helper()
	body := `{"cell":"latency-curve","kind":"latency","curve":[{"bytes":4096,"ns":0.9},{"bytes":65536,"ns":2.5},{"bytes":1048576,"ns":6},{"bytes":16777216,"ns":35},{"bytes":268435456,"ns":95}],
		"machine":{"cores":8,"browser":"Safari 18","platform":"macOS","plateaus":[{"name":"L1","ns":0.9,"size_bytes":131072},{"name":"L2","ns":6,"size_bytes":16777216},{"name":"memory","ns":95}]}}`
	req, _ := http.NewRequest("POST", base+"/api/class/me/own", strings.NewReader(body))
	req.Header.Set("Cookie", cookie)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /api/class/me/own: %s", resp.Status)
	}
}

// TestKeyboardOnly: from the top of a lesson, Tab reaches the page's
// buttons and every cell's, each shows a visible focus ring, and a SQL
// cell runs from the keyboard (Tab to it, Ctrl+Enter).
func TestKeyboardOnly(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	id := setCell(t, ctx, "SELECT count(*) AS n FROM hits")
	// Walk the tab order and note what gets the focus and whether it shows.
	const steps = 150
	var seen []string
	noRing := map[string]bool{}
	get(t, ctx, "focus the top of the page", chromedp.Evaluate[bool](`(document.querySelector("header a, header button").focus(), true)`))
	for i := 0; i < steps; i++ {
		do(t, ctx, "press Tab", chromedp.KeyEvent(kb.Tab))
		var f struct {
			Desc string `json:"desc"`
			Ring bool   `json:"ring"`
		}
		js := get(t, ctx, "the focused element", chromedp.Evaluate[string](`(() => {
			const e = document.activeElement;
			if (!e || e === document.body) return JSON.stringify({ desc: "body", ring: true });
			const s = getComputedStyle(e);
			const shows = (s) => (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) || (s.boxShadow && s.boxShadow !== "none");
			const ed = e.closest(".cm-editor");
			const ring = shows(s) || (ed && shows(getComputedStyle(ed)));
			const cell = e.closest(".cell");
			const desc = (cell ? "cell " + cell.dataset.cell + " " : "") + e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.split(" ").join(".") : "") + (e.getAttribute("aria-label") ? "[" + e.getAttribute("aria-label") + "]" : "");
			return JSON.stringify({ desc, ring: !!ring });
		})()`))
		_ = json.Unmarshal([]byte(js), &f)
		seen = append(seen, f.Desc)
		if !f.Ring {
			noRing[f.Desc] = true
		}
	}
	joined := strings.Join(seen, "\n")
	for _, want := range []string{"select#runmode", "cell " + id + " div.cell", "cell " + id + " button.run", "[Move cell up]", "[Delete cell]"} {
		if !strings.Contains(joined, want) {
			t.Errorf("%d Tab presses never reached %q; the tab order:\n%s", steps, want, joined)
		}
	}
	if len(noRing) > 0 {
		var list []string
		for d := range noRing {
			list = append(list, d)
		}
		t.Errorf("focused without a visible focus indicator: %s", strings.Join(list, ", "))
	}
	// Run the SQL cell from the keyboard: focus it, Ctrl+Enter.
	get(t, ctx, "focus the SQL cell", chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%s).focus(), true)`, jsString(cellEl(id)))))
	do(t, ctx, "press Ctrl+Enter", chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	do(t, ctx, "Ctrl+Enter on the focused cell runs it", chromedp.WaitVisible(cellSel(id, "table.grid")))
}
