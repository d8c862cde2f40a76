package web

import (
	"strings"
	"testing"
	"testing/fstest"
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
