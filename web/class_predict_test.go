package web

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"cachebook/kernel"
)

// TestClassRealPredictions: learners run a latency cell carrying a real
// prediction (the kernel's predict-then-run, notebook/predict): one
// numeric, one multiple choice; the class view gathers every guess with
// the value the kernel measured.
func TestClassRealPredictions(t *testing.T) {
	ts, _ := newClassServer(t, ClassConfig{})
	const n = 6
	numeric := json.RawMessage(`{"question":"ns per load at the largest size?","unit":"ns","measure":"points[last].ns",
		"article":{"value":10,"source":"the article"},"check":"a few ns in L2"}`)
	choice := json.RawMessage(`{"question":"Where does 64 KiB live?","choices":["L1","L2","DRAM"],"bounds":[3,30],"measure":"points[last].ns"}`)
	for i := 0; i < n; i++ {
		l := ts.join(t, fmt.Sprintf("p%d", i))
		c, _ := ts.dialAs(t, l.cookie(), "tab")
		for _, cell := range []struct {
			id, spec, guess string
		}{
			{"num", string(numeric), fmt.Sprintf(`{"value":%d}`, 2+i)},
			{"mc", string(choice), fmt.Sprintf(`{"choice":%q}`, []string{"L1", "L2", "DRAM"}[i%3])},
		} {
			req := c.send(kernel.ChannelShell, kernel.MsgExecuteRequest, map[string]any{
				"code": testLatencyCell, "kind": kernel.KindLatency, "cell_id": cell.id,
				"predict": json.RawMessage(cell.spec), "guess": json.RawMessage(cell.guess)})
			ms := c.until(replyTo(req, kernel.MsgExecuteReply))
			var r kernel.ExecuteReply
			_ = ms[len(ms)-1].DecodeContent(&r)
			if r.Status != kernel.StatusOK {
				t.Fatalf("learner %d cell %s: %+v", i, cell.id, r)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := ts.snapshot(t)
		if len(s.Predictions) == 2 && len(s.Predictions[0].Guesses) == n && len(s.Predictions[1].Guesses) == n {
			mc, num := s.Predictions[0], s.Predictions[1]
			if mc.Cell != "mc" || len(mc.Choices) != 3 || num.Unit != "ns" {
				t.Fatalf("predictions %+v", s.Predictions)
			}
			for _, g := range num.Guesses {
				if g.Guess == nil || g.Measured == nil || *g.Measured <= 0 {
					t.Errorf("numeric guess %+v", g)
				}
			}
			for _, g := range mc.Guesses {
				if g.GuessChoice == "" || g.MeasuredChoice == "" {
					t.Errorf("choice guess %+v", g)
				}
			}
			t.Logf("numeric: %d guesses; choice: measured %q", len(num.Guesses), mc.MeasuredChoice)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("class view predictions: %+v", s.Predictions)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
