package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"cachebook/notebook"
	"cachebook/web"
)

// TestClassPrepared: a class server that prepares its class measures
// lesson 1's latency cell when it starts; the class view says what it
// measured and until when it is shared, a learner who runs the cell gets
// that measurement at once, labelled with its time, and a pushed
// lesson's measurement shows in the class view while it runs.
func TestClassPrepared(t *testing.T) {
	// Lesson 1's curve ends at 4 MiB here (it measures in seconds).
	base := classServerLessons(t, web.ClassConfig{Prepare: true}, smallLessonOne{web.BuiltinLessons()})
	teacher := browser(t)
	do(t, teacher, "the class view lists lesson 1's prepared measurement",
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(base+"/class?token=secret"),
		chromedp.WaitVisible(chromedp.CSS("#roster")),
		poll(`(document.querySelector("#prepared")?.textContent || "").includes("fresh until")`),
	)
	if p := text(t, teacher, "#prepared"); !strings.Contains(p, "lesson 1 latency") || !strings.Contains(p, "while learners are connected") {
		t.Errorf("prepared measurements: %q", p)
	}

	learner := browser(t)
	do(t, learner, "join",
		chromedp.Navigate(base+"/join?code=CACHE7"),
		chromedp.WaitVisible(chromedp.CSS("#joinname")),
		chromedp.SendKeys(chromedp.CSS("#joinname"), "Ada"),
		chromedp.Click(chromedp.CSS("#joinbtn")),
		chromedp.WaitVisible(chromedp.CSS("#classbanner")),
	)
	teacherDo(t, base, "POST", "/api/class/push", `{"lesson":"01-latency"}`)
	const pc = "latency-curve"
	do(t, learner, "run lesson 1's latency cell as written: the shared measurement comes at once",
		poll(`location.hash === "#/lesson/01-latency"`),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
		chromedp.WaitVisible(cellSel(pc, ".predict input.guessin")),
		chromedp.SendKeys(cellSel(pc, ".predict input.guessin"), "120"),
		chromedp.Click(cellSel(pc, ".predict button.commit")),
		chromedp.WaitVisible(cellSel(pc, ".predict .locked")),
		clickRun(pc),
		chromedp.WaitVisible(cellSel(pc, ".sharednote")),
	)
	if n := text(t, learner, cellEl(pc)+" .sharednote"); !strings.Contains(n, "Shared measurement of the server, taken at") {
		t.Errorf("the learner's shared result is labelled %q", n)
	}
	screenshot(t, learner, "class-learner-prepared")

	// The teacher pushes lesson 8: its latency cell (as written) is
	// measured in the background, and the class view says so while it
	// runs (an observer notes the line, however short the run).
	get(t, teacher, "watch the roster", chromedp.Evaluate[bool](`(() => {
		window.sawMeasuring = "";
		new MutationObserver(() => {
			const m = document.querySelector("#measuring");
			if (m) window.sawMeasuring = m.textContent;
		}).observe(document.querySelector("#rostertable"), { childList: true, subtree: true, characterData: true });
		return true;
	})()`))
	teacherDo(t, base, "POST", "/api/class/push", `{"lesson":"08-transfer"}`)
	do(t, teacher, "the class view shows the pushed lesson's measurement",
		poll(`window.sawMeasuring.includes("measuring the server for lesson 8")`),
	)
	screenshot(t, teacher, "class-view-measuring")
	do(t, teacher, "and then its shared result, beside lesson 1's",
		poll(`/lesson 8 latency \([^)]*\): shared, measured/.test(document.querySelector("#prepared")?.textContent || "")`),
	)
	if p := text(t, teacher, "#prepared"); !strings.Contains(p, "lesson 1 latency") {
		t.Errorf("after the push, the prepared measurements lost lesson 1's: %q", p)
	}
	screenshot(t, teacher, "class-view-prepared")
}

// smallLessonOne serves the built-in lessons with lesson 1's latency
// curve ending at 4 MiB, one timed run per size.
type smallLessonOne struct{ web.Lessons }

func (l smallLessonOne) Open(id string) (*notebook.Notebook, error) {
	nb, err := l.Lessons.Open(id)
	if err != nil || id != "01-latency" {
		return nb, err
	}
	for _, c := range nb.Cells {
		if c.Kind == notebook.KindLatency {
			if c.Attrs == nil {
				c.Attrs = map[string]string{}
			}
			c.Attrs["max"], c.Attrs["reps"] = "4M", "1"
		}
	}
	return nb, nil
}
