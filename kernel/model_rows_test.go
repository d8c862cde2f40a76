package kernel

import (
	"context"
	"strings"
	"testing"

	"cachebook/engine/cachesim/trace"
)

// TestModelRowsAttr checks the time-sampling attribute rows= of modelled
// counters: absent it is chosen by input size, else 1/N, auto or off.
func TestModelRowsAttr(t *testing.T) {
	for _, c := range []struct {
		rows  string
		every int
		bad   bool
	}{
		{"", trace.TimeAuto, false},
		{"auto", trace.TimeAuto, false},
		{"off", 0, false},
		{"1/8", 8, false},
		{"1/0", 0, true},
		{"1/5000", 0, true},
		{"half", 0, true},
	} {
		attrs := map[string]string{"sample": "1/16"}
		if c.rows != "" {
			attrs["rows"] = c.rows
		}
		m, err := NewModelRecorder(attrs)
		if c.bad {
			if err == nil {
				t.Errorf("rows=%s: no error", c.rows)
			}
			continue
		}
		if err != nil {
			t.Errorf("rows=%s: %v", c.rows, err)
			continue
		}
		if m.samp.Every != c.every {
			t.Errorf("rows=%s: every %d, want %d", c.rows, m.samp.Every, c.every)
		}
	}
	x := newEngineExecutor(t)
	reply, err := x.Execute(context.Background(), Cell{Source: "SET group_by = 'naive'; SELECT UserID, count(*) FROM hits GROUP BY UserID",
		Attrs: map[string]string{"counters": "model", "rows": "1/2"}}, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	text := reply.Outcome.Data[MIMEText].(string)
	if !strings.Contains(text, "1 in 2 windows of 16384 line accesses (1/2), caches warmed") {
		t.Errorf("text does not state the time sampling:\n%s", text)
	}
}
