package jupyter

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCompleteMatchesIsList: complete_reply's matches is a JSON list when
// nothing matches, with or without an engine (classic Notebook reads its
// length and throws on null).
func TestCompleteMatchesIsList(t *testing.T) {
	for _, tc := range []struct {
		name     string
		withData bool
		code     string
	}{
		{"no match", true, "SELECT zzzzzz"},
		{"no engine", false, "SELECT Us"},
		{"empty", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := testKernel(t, tc.withData)
			b, err := json.Marshal(k.complete(t.Context(), tc.code, len([]rune(tc.code))))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Matches *[]string `json:"matches"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.Matches == nil {
				t.Errorf("complete_reply %s: matches is not a list", b)
			}
		})
	}
}

// TestHistoryAnswer: history_request answers as IPython's history manager
// does for the current session.
func TestHistoryAnswer(t *testing.T) {
	var h history
	for i, in := range []string{"SELECT 1", "SELECT 2", "%%latency", "SELECT 2"} {
		h.add(i+1, in)
	}
	h.output(2, "2")
	n := func(i int) *int { return &i }
	for _, tc := range []struct {
		name string
		req  historyRequest
		want string
	}{
		{"tail", historyRequest{HistAccessType: "tail", N: n(2)}, `[[1,3,"%%latency"],[1,4,"SELECT 2"]]`},
		{"tail all", historyRequest{HistAccessType: "tail"}, `[[1,1,"SELECT 1"],[1,2,"SELECT 2"],[1,3,"%%latency"],[1,4,"SELECT 2"]]`},
		{"tail more than there is", historyRequest{HistAccessType: "tail", N: n(10)}, `[[1,1,"SELECT 1"],[1,2,"SELECT 2"],[1,3,"%%latency"],[1,4,"SELECT 2"]]`},
		{"range", historyRequest{HistAccessType: "range", Start: 2, Stop: n(4)}, `[[0,2,"SELECT 2"],[0,3,"%%latency"]]`},
		{"range session 1 to the end", historyRequest{HistAccessType: "range", Session: 1, Start: 3}, `[[0,3,"%%latency"],[0,4,"SELECT 2"]]`},
		{"range earlier session", historyRequest{HistAccessType: "range", Session: -1}, `[]`},
		{"range with output", historyRequest{HistAccessType: "range", Start: 1, Stop: n(3), Output: true}, `[[0,1,["SELECT 1",null]],[0,2,["SELECT 2","2"]]]`},
		{"search", historyRequest{HistAccessType: "search", Pattern: "SELECT*"}, `[[1,1,"SELECT 1"],[1,2,"SELECT 2"],[1,4,"SELECT 2"]]`},
		{"search unique", historyRequest{HistAccessType: "search", Pattern: "SELECT ?", Unique: true}, `[[1,1,"SELECT 1"],[1,4,"SELECT 2"]]`},
		{"search last n", historyRequest{HistAccessType: "search", Pattern: "*", N: n(1)}, `[[1,4,"SELECT 2"]]`},
		{"search class", historyRequest{HistAccessType: "search", Pattern: "SELECT [1]"}, `[[1,1,"SELECT 1"]]`},
		{"search no match", historyRequest{HistAccessType: "search", Pattern: "select*"}, `[]`},
		{"unknown type", historyRequest{HistAccessType: "sideways"}, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(h.answer(tc.req))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("history %+v = %s, want %s", tc.req, b, tc.want)
			}
		})
	}
}

// TestRunAllStopsAtError sends what a notebook's "Run all" sends — a cell
// that fails at once and three more, back to back — ten times over the
// sockets: every time the three are aborted, and their replies carry no
// execution count. Then the execution counter: silent and
// store_history=false executions do not advance it; the history holds
// the stored inputs.
func TestRunAllStopsAtError(t *testing.T) {
	_, c, _ := startKernel(t)
	stopped := 0
	for try := range 10 {
		ids := []string{c.send(c.shell, "execute_request", map[string]any{"code": "SELEC 1"}, c.sign)}
		for j := range 3 {
			ids = append(ids, c.send(c.shell, "execute_request", map[string]any{"code": fmt.Sprintf("SELECT %d", try*10+j)}, c.sign))
		}
		var statuses []string
		all := true
		for i, id := range ids {
			_, r := c.reply(c.shell, id)
			statuses = append(statuses, fmt.Sprint(r["status"]))
			if i > 0 {
				all = all && r["status"] == "aborted"
				if _, ok := r["execution_count"]; ok {
					t.Errorf("aborted reply %v carries an execution_count", r)
				}
			}
		}
		if all {
			stopped++
		} else {
			t.Logf("try %d: %v", try, statuses)
		}
	}
	t.Logf("Run all stopped at the error %d of 10 times", stopped)
	if stopped != 10 {
		t.Errorf("Run all stopped at the error %d of 10 times, want 10", stopped)
	}

	// Sent after its client saw the error, a cell runs; then the counter.
	f := false
	var counts []any
	for _, content := range []map[string]any{
		{"code": "SELECT 'first'"},
		{"code": "SELECT 'silent'", "silent": true},
		{"code": "SELECT 'no history'", "store_history": &f},
		{"code": "SELECT 'second'"},
	} {
		_, r := c.reply(c.shell, c.send(c.shell, "execute_request", content, c.sign))
		if r["status"] != "ok" {
			t.Errorf("%v: %v", content, r)
		}
		counts = append(counts, r["execution_count"])
	}
	n := counts[0].(float64)
	if want := []any{n, n, n, n + 1}; !reflect.DeepEqual(counts, want) {
		t.Errorf("execution counts %v, want %v", counts, want)
	}
	_, r := c.reply(c.shell, c.send(c.shell, "history_request", map[string]any{"hist_access_type": "tail", "n": 2, "output": false, "raw": true}, c.sign))
	if b, _ := json.Marshal(r["history"]); !strings.Contains(string(b), fmt.Sprintf(`[1,%v,"SELECT 'first'"],[1,%v,"SELECT 'second'"]`, n, n+1)) {
		t.Errorf("history tail = %s", b)
	}
}

// TestLiveUpdatesCoalesced: a measurement cell's live display updates
// reach Jupyter at most one per updateGap for each display, the
// measurement chart without its PNG.
func TestLiveUpdatesCoalesced(t *testing.T) {
	_, c, _ := startKernel(t)
	id := c.send(c.shell, "execute_request", map[string]any{"code": "%%latency max=2M sample=10ms reps=1"}, c.sign)
	if _, r := c.reply(c.shell, id); r["status"] != "ok" {
		t.Fatalf("latency cell: %v", r)
	}
	msgs, ok := c.waitIdle(id, 30*time.Second)
	if !ok {
		t.Fatal("no idle status")
	}
	last := map[string]time.Time{}
	updates, result := 0, -1
	for i, m := range msgs {
		switch m.Header.MsgType {
		case "execute_result":
			result = i
		case "update_display_data":
			var u struct {
				Data      map[string]any `json:"data"`
				Transient struct {
					DisplayID string `json:"display_id"`
				} `json:"transient"`
			}
			_ = json.Unmarshal(m.Content, &u)
			if result >= 0 {
				continue // the notes that replace the live displays
			}
			updates++
			if _, png := u.Data[MIMEPNG]; png {
				t.Errorf("live update %d carries a PNG", updates)
			}
			at, err := time.Parse(time.RFC3339Nano, m.Header.Date)
			if err != nil {
				t.Fatal(err)
			}
			// Dates are in microseconds; a held update goes out with
			// the next batch, never early.
			id := u.Transient.DisplayID
			if l, ok := last[id]; ok && at.Sub(l) < updateGap-time.Millisecond {
				t.Errorf("updates of %s %v apart, want at least %v", id, at.Sub(l), updateGap)
			}
			last[id] = at
		}
	}
	t.Logf("%d live updates before the result", updates)
	if updates == 0 || result < 0 {
		t.Errorf("iopub: %s, want live updates, then the result", msgTypes(msgs))
	}
}
