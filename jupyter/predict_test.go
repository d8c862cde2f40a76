package jupyter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cachebook/engine/gen/gentest"
	"cachebook/kernel"

	"github.com/go-zeromq/zmq4"
)

func TestRequestPrediction(t *testing.T) {
	const spec = `{"question": "q", "unit": "ns", "measure": "points[last].ns"}`
	tests := []struct {
		name      string
		meta      string
		spec      bool
		guess     float64 // 0: none
		wantGuess bool
	}{
		{"none", `{}`, false, 0, false},
		{"empty", ``, false, 0, false},
		{"spec and guess", `{"cachebook": {"predict": ` + spec + `, "guess": {"value": 90}}}`, true, 90, true},
		{"as exported", `{"cachebook": {"meta": {"predict": ` + spec + `, "guess": {"value": 80}}}}`, true, 80, true},
		{"spec only", `{"cachebook": {"predict": ` + spec + `}}`, true, 0, false},
		{"bad spec", `{"cachebook": {"predict": {"question": "q"}}}`, false, 0, false},
		{"guess of the wrong kind", `{"cachebook": {"predict": ` + spec + `, "guess": {"choice": "x"}}}`, true, 0, false},
		{"not JSON", `{`, false, 0, false},
	}
	for _, tt := range tests {
		s, g := requestPrediction(json.RawMessage(tt.meta))
		if (s != nil) != tt.spec || (g != nil) != tt.wantGuess {
			t.Errorf("%s: spec %v guess %v, want spec %v guess %v", tt.name, s, g, tt.spec, tt.wantGuess)
			continue
		}
		if g != nil && (g.Value == nil || *g.Value != tt.guess) {
			t.Errorf("%s: guess %+v, want %v", tt.name, g, tt.guess)
		}
	}
}

// TestKernelPrediction sends an execute_request whose metadata carries a
// prediction and a guess: the kernel publishes the prediction display.
func TestKernelPrediction(t *testing.T) {
	_, c, done := startKernel(t)
	m, err := newMessage("execute_request", c.session, nil, map[string]any{"code": "SELECT count(*) AS n FROM hits"})
	if err != nil {
		t.Fatal(err)
	}
	m.Metadata = json.RawMessage(`{"cachebook": {"meta": {"predict": {"question": "Rows?", "unit": "rows", "measure": "value(1, n)"}, "guess": {"value": 5}}}}`)
	frames, err := c.sign.encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.shell.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		t.Fatal(err)
	}
	id := m.Header.MsgID
	if _, r := c.reply(c.shell, id); r["status"] != "ok" {
		t.Fatalf("reply %v", r)
	}
	msgs, _ := c.waitIdle(id, 10*time.Second)
	found := false
	for _, msg := range msgs {
		if msg.Header.MsgType != "display_data" {
			continue
		}
		var d struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if json.Unmarshal(msg.Content, &d) != nil {
			continue
		}
		raw, ok := d.Data[kernel.MIMEPrediction]
		if !ok {
			continue
		}
		found = true
		var o map[string]any
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		if o["guess"] != 5.0 || o["measured"] != float64(gentest.Rows) || o["question"] != "Rows?" {
			t.Errorf("prediction %v", o)
		}
		if !strings.Contains(string(d.Data[MIMEText]), "Prediction: Rows?") {
			t.Errorf("text/plain %s", d.Data[MIMEText])
		}
	}
	if !found {
		t.Errorf("no prediction display in %s", msgTypes(msgs))
	}
	id = c.send(c.control, "shutdown_request", map[string]any{}, c.sign)
	c.reply(c.control, id)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
