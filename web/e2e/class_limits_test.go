package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"cachebook/web"
)

// TestClassLimitsPages: what the class's limits look like in the
// browser. The teacher's class view drops the token from the address
// bar; a learner's second tab over a one-tab limit says so on the page,
// and connects once the first tab is closed; a full class says so on the
// class view.
func TestClassLimitsPages(t *testing.T) {
	base := classServerWith(t, web.ClassConfig{MaxLearners: 3, MaxSessions: 1})

	teacher := browser(t)
	do(t, teacher, "open the class view with the token",
		chromedp.Navigate(base+"/class?token=secret"),
		chromedp.WaitVisible(chromedp.CSS("#rostertable table")),
		chromedp.WaitVisible(chromedp.CSS("#joins")),
	)
	if u := get(t, teacher, "the address bar", chromedp.Evaluate[string](`location.href`)); strings.Contains(u, "token") || !strings.HasSuffix(u, "/class") {
		t.Errorf("the class view's address bar: %q", u)
	}
	screenshot(t, teacher, "class-limits-token-gone")

	learner := browser(t)
	do(t, learner, "join and open the notebook page",
		chromedp.Navigate(base+"/join?code=CACHE7"),
		chromedp.WaitVisible(chromedp.CSS("#joinname")),
		chromedp.SendKeys(chromedp.CSS("#joinname"), "Grace\u202E"),
		chromedp.Click(chromedp.CSS("#joinbtn")),
		chromedp.WaitVisible(chromedp.CSS("#classbanner")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	if b := text(t, learner, "#classbanner"); !strings.Contains(b, "you are Grace") || strings.Contains(b, "\u202E") {
		t.Errorf("class bar %q", b)
	}
	second, cancel := chromedp.NewContext(learner)
	defer cancel()
	do(t, second, "a second tab over the one-tab limit",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="too many tabs"]`)),
		chromedp.WaitVisible(chromedp.CSS("#serverbanner")),
	)
	if b := text(t, second, "#serverbanner"); !strings.HasPrefix(b, "you have 1 tab open") || !strings.Contains(b, "close one") {
		t.Errorf("the second tab's banner: %q", b)
	}
	screenshot(t, second, "class-limits-too-many-tabs")
	// Leaving the page closes the first tab's socket as closing it would.
	do(t, learner, "leave the first tab's page", chromedp.Navigate("about:blank"))
	do(t, second, "the second tab connects once the first is closed",
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
		chromedp.WaitNotVisible(chromedp.CSS("#serverbanner")),
	)

	// Fill the class (3) and try a fourth.
	joinClass(t, base, "Ada")
	joinClass(t, base, "Bob")
	resp, err := http.Post(base+"/api/class/join", "application/json", strings.NewReader(`{"code":"cache7","name":"Dora"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a fourth join into a class of 3: %d", resp.StatusCode)
	}
	do(t, teacher, "the class view says the class is full",
		chromedp.WaitVisible(chromedp.CSS("#classfull")),
		poll(`document.querySelector("#joins").textContent.includes("1 while full")`),
	)
	full := text(t, teacher, "#classfull")
	if !strings.Contains(full, "The class is full: 3 of 3") || !strings.Contains(full, "(1 so far)") {
		t.Errorf("the full banner: %q", full)
	}
	if j := text(t, teacher, "#joins"); !strings.Contains(j, "3/3 learners") || !strings.Contains(j, "3 joined in the last minute") {
		t.Errorf("the joins line: %q", j)
	}
	screenshot(t, teacher, "class-limits-full")
}
