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
)

// TestClassRemovedLearnerPage: a learner the teacher removes sees one
// message, and the tab stops reconnecting; non-class pages do not ask
// for /api/class/me; a running cell's timer shows its clock.
func TestClassRemovedLearnerPage(t *testing.T) {
	base := classServer(t)
	ctx := browser(t)
	do(t, ctx, "join",
		chromedp.Navigate(base+"/join?code=CACHE7"),
		chromedp.WaitVisible(chromedp.CSS("#joinname")),
		chromedp.SendKeys(chromedp.CSS("#joinname"), "Linus"),
		chromedp.Click(chromedp.CSS("#joinbtn")),
		chromedp.WaitVisible(chromedp.CSS("#classbanner")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	req, _ := http.NewRequest("GET", base+"/api/class", nil)
	req.Header.Set("Authorization", "token secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Learners []struct{ ID string } `json:"learners"`
	}
	err = jsonDecode(resp, &snap)
	if err != nil || len(snap.Learners) != 1 {
		t.Fatalf("roster: %v %+v", err, snap)
	}
	teacherDo(t, base, "DELETE", "/api/class/learners/"+snap.Learners[0].ID, "")
	do(t, ctx, "the page says the learner was removed",
		poll(`document.querySelector("#classbanner").textContent.includes("removed you")`),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="removed"]`)),
	)
	time.Sleep(3 * time.Second) // a retrying tab would have tried again by now
	state := get(t, ctx, "the tab's state", chromedp.Evaluate[string](`JSON.stringify({
		stopped: !!cachebookApp.server.stopped,
		banner: (document.querySelector("#serverbanner:not(.hidden)") || {}).textContent || "",
		removed: [...document.querySelectorAll("body *")].filter((e) => e.children.length === 0 && /removed you/.test(e.textContent)).length,
		token: document.body.textContent.includes("new token") || document.body.textContent.includes("restarted with a new one"),
	})`))
	if !strings.Contains(state, `"stopped":true`) || !strings.Contains(state, `"banner":""`) || !strings.Contains(state, `"token":false`) {
		t.Errorf("after the removal: %s; want the tab stopped, no server banner, no new-token message", state)
	}
	if !strings.Contains(state, `"removed":1`) {
		t.Errorf("after the removal: %s; want the removal said once", state)
	}
}

// TestNoClassRequestsElsewhere: the plain server's page does not ask
// for /api/class/me (which would log a 404), and a running cell's timer
// draws its clock.
func TestNoClassRequestsElsewhere(t *testing.T) {
	ctx := browser(t)
	openLesson(t, ctx)
	n := get(t, ctx, "class requests", chromedp.Evaluate[int](`performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/class")).length`))
	if n != 0 {
		t.Errorf("the notebook page of a plain server made %d /api/class requests", n)
	}
	id := setCell(t, ctx, strings.Repeat(query+";\n", 400))
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	do(t, tctx, "run a long cell", clickRun(id), chromedp.WaitVisible(chromedp.CSS(cellEl(id)+".running .timer.live")))
	img := get(t, ctx, "the timer's clock", chromedp.Evaluate[string](fmt.Sprintf(
		`getComputedStyle(document.querySelector(%s), "::before").backgroundImage`, jsString(cellEl(id)+" .timer"))))
	if !strings.Contains(img, "svg") {
		t.Errorf("the running timer's clock is %q, want the SVG", img)
	}
	if txt := text(t, ctx, cellEl(id)+" .timer"); strings.ContainsRune(txt, '⏱') {
		t.Errorf("the timer %q still uses the clock glyph the font may lack", txt)
	}
	screenshot(t, ctx, "timer-running")
	get(t, ctx, "interrupt", chromedp.Evaluate[bool](`(cachebookApp.nb.interrupt(), true)`))
}

// jsonDecode reads resp's JSON body into v and closes it.
func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
