package web

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"cachebook/kernel"
)

// TestClassRemovedLearnerTold: a removed learner's tab is told why it is
// refused (one message, and the page stops retrying), unlike a wrong
// token (a restart with a new one).
func TestClassRemovedLearnerTold(t *testing.T) {
	ts, _ := newClassServer(t, ClassConfig{})
	l := ts.join(t, "ada")
	if code, _ := ts.do(t, l.cookie(), "GET", "/api/status", ""); code != 200 {
		t.Fatalf("a learner's status: %d", code)
	}
	if code, body := ts.do(t, "teacher", "DELETE", "/api/class/learners/"+l.ID, ""); code != 200 {
		t.Fatalf("remove: %d %s", code, body)
	}
	tests := []struct {
		name, cookie, want string
	}{
		{"removed learner", l.cookie(), "the teacher removed you from the class"},
		{"unknown token", LearnerCookieName + "=0123456789abcdef", "missing or wrong token"},
		{"old teacher token", CookieName + "=old", "missing or wrong token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.do(t, tc.cookie, "GET", "/api/status", "")
			if code != 401 || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %q, want 401 saying %q", code, body, tc.want)
			}
		})
	}
}

// TestClassPageMarked: a class server's page carries data-class, so that
// class.js asks /api/class/me only there (no 404 elsewhere).
func TestClassPageMarked(t *testing.T) {
	static := fstest.MapFS{"index.html": {Data: []byte("<!doctype html><body><div id=app></div></body>")}}
	tests := []struct {
		name  string
		class *ClassConfig
		want  bool
	}{
		{"class server", &ClassConfig{Name: "c", Code: "JOIN42"}, true},
		{"plain server", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, Config{Class: tc.class, Static: static})
			code, body := ts.do(t, "teacher", "GET", "/", "")
			if code != 200 || strings.Contains(body, `data-class="1"`) != tc.want {
				t.Fatalf("%d %q: data-class present = %v, want %v", code, body, !tc.want, tc.want)
			}
		})
	}
}

// TestClassRosterQueue: the roster numbers the learners waiting for the
// measurement core in the order they queued, with an expected wait from
// the measurements' run times, and tells apart one waiting for a shared
// run.
func TestClassRosterQueue(t *testing.T) {
	clock := newFakeClock()
	c := newClass(ClassConfig{Code: "JOIN42", Now: clock.Now}, "")
	var ls []*learner
	for _, name := range []string{"ada", "bob", "cy"} {
		l, err := c.join("addr", "JOIN42", name)
		if err != nil {
			t.Fatal(err)
		}
		l.pending["m-"+name] = pendingCell{kind: kernel.KindLatency, sent: clock.Now()}
		ls = append(ls, l)
	}
	c.measRuns = []time.Duration{20 * time.Second}
	frame := func(l *learner, typ string, content string) {
		data := fmt.Sprintf(`{"header":{"msg_type":%q},"parent_header":{"msg_id":"m-%s"},"content":%s}`, typ, l.Name, content)
		c.observe(classFrame{session: prefix(l.ID) + "tab", data: []byte(data)})
	}
	frame(ls[0], kernel.MsgStatus, `{"execution_state":"queued","queue_position":1}`)
	clock.Add(time.Second)
	frame(ls[1], kernel.MsgStatus, `{"execution_state":"queued","queue_position":2}`)
	frame(ls[2], kernel.MsgStatus, `{"execution_state":"queued","shared":true,"expected_wait_ns":10000000000}`)
	clock.Add(time.Second)
	type row struct {
		pos    int
		shared bool
		waitS  float64
	}
	got := func() []row {
		var out []row
		for _, v := range c.snapshot().Learners {
			out = append(out, row{v.QueuePosition, v.WaitingShared, v.ExpectedWaitMs / 1000})
		}
		return out
	}
	want := []row{{1, false, 20}, {2, false, 40}, {0, true, 9}}
	if g := got(); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("roster %v, want %v", g, want)
	}
	if s := c.snapshot().Stats; s.Waiting != 3 {
		t.Errorf("%d waiting, want 3", s.Waiting)
	}
	// ada starts: bob moves up.
	frame(ls[0], kernel.MsgExecuteInput, `{"code":"","kind":"latency"}`)
	want = []row{{0, false, 0}, {1, false, 20}, {0, true, 9}}
	if g := got(); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("after ada started: roster %v, want %v", g, want)
	}
}
