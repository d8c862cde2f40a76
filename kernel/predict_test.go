package kernel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"cachebook/kernel/perf"
	"cachebook/notebook/predict"
)

// predictions returns the prediction displays rec saw, decoded from JSON
// as a client reads them.
func predictions(t *testing.T, rec *recorder) []map[string]any {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []map[string]any
	for _, m := range rec.msgs {
		if m.Header.MsgType != MsgDisplayData {
			continue
		}
		b, err := Encode(&m)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Content struct {
				Data map[string]json.RawMessage `json:"data"`
			} `json:"content"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		raw, ok := f.Content.Data[MIMEPrediction]
		if !ok {
			continue
		}
		var o map[string]any
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func TestPredictionDisplay(t *testing.T) {
	x := newEngineExecutor(t)
	ratio := &predict.Spec{Question: "How many times slower is naive?", Unit: "×", Measure: "elapsed(1) / elapsed(2)",
		Article: &predict.Article{Value: 1.33, Source: "Pivot"}, Check: "Expect **1.1–2×**."}
	guess := 2.0
	fails := &predict.Spec{Question: "Will it answer?", Choices: []string{"it answers", "it fails"}, Bounds: []float64{0.5}, Measure: "failed(1)"}
	const two = "SET group_by = 'naive'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3; " +
		"SET group_by = 'radix'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3"
	tests := []struct {
		name     string
		cell     Cell
		measured bool
		note     string
	}{
		{"ratio", Cell{Kind: KindSQL, ID: "r", Source: two, Predict: ratio, Guess: &predict.Guess{Value: &guess, At: "t"}}, true, ""},
		{"value", Cell{Kind: KindSQL, ID: "v", Source: "SELECT count(*) AS n FROM hits",
			Predict: &predict.Spec{Question: "rows?", Unit: "rows", Measure: "value(1, n)"}}, true, ""},
		{"per row", Cell{Kind: KindSQL, ID: "p", Source: "SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3",
			Predict: &predict.Spec{Question: "ns per row?", Unit: "ns", Measure: "elapsed(1) / scanned(1)"}}, true, ""},
		{"no table", Cell{Kind: KindSQL, ID: "t", Source: "SELECT 1 AS a",
			Predict: &predict.Spec{Question: "ns per row?", Unit: "ns", Measure: "elapsed(1) / scanned(1)"}}, false, "read no table rows"},
		{"missing statement", Cell{Kind: KindSQL, ID: "m", Source: "SELECT 1 AS a", Predict: ratio}, false, "ran 1 query"},
		{"sql error", Cell{Kind: KindSQL, ID: "e", Source: "SELECT nope FROM hits", Predict: ratio}, false, "the cell failed (SQLError"},
		{"fails as predicted", Cell{Kind: KindSQL, ID: "f", Source: "SET group_by = 'naive'; SET memory_limit = '64KB'; SELECT UserID, URL, count(*) FROM hits GROUP BY UserID, URL",
			Predict: fails}, true, ""},
		{"answers", Cell{Kind: KindSQL, ID: "a", Source: "RESET ALL; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3", Predict: fails}, true, ""},
		{"fails in a SET", Cell{Kind: KindSQL, ID: "s", Source: "SET memory_limit = 'lots'; SELECT 1", Predict: fails}, false, "the cell failed"},
		{"unknown kind", Cell{Kind: "nope", ID: "k", Predict: ratio}, false, "UnknownKind"},
		{"invalid spec", Cell{Kind: KindSQL, ID: "i", Source: "SELECT 1", Predict: &predict.Spec{Question: "q", Unit: "ns", Measure: "elapsed("}}, false, "column 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			_, _ = x.Execute(context.Background(), tt.cell, rec.emit)
			ps := predictions(t, &rec)
			if len(ps) != 1 {
				t.Fatalf("%d prediction displays, want 1 (messages %v)", len(ps), rec.types())
			}
			p := ps[0]
			if p["cell"] != tt.cell.ID || p["question"] != tt.cell.Predict.Question {
				t.Errorf("display %v", p)
			}
			if got := p["measured"] != nil; got != tt.measured {
				t.Errorf("measured = %v, want measured %v (note %v)", p["measured"], tt.measured, p["note"])
			}
			if tt.note != "" && !strings.Contains(p["note"].(string), tt.note) {
				t.Errorf("note %q, want it to contain %q", p["note"], tt.note)
			}
			if want := map[string]string{"f": "it fails", "a": "it answers"}[tt.cell.ID]; want != "" && p["measured_choice"] != want {
				t.Errorf("measured choice %v, want %q", p["measured_choice"], want)
			}
		})
	}
	// The ratio's display carries the guess and the article.
	var rec recorder
	if _, err := x.Execute(context.Background(), tests[0].cell, rec.emit); err != nil {
		t.Fatal(err)
	}
	p := predictions(t, &rec)[0]
	if p["guess"] != 2.0 || p["article"] != 1.33 || p["article_source"] != "Pivot" || p["unit"] != "×" || p["guess_choice"] != nil ||
		p["check"] != "Expect **1.1–2×**." || p["measured"].(float64) <= 0 {
		t.Errorf("display %v", p)
	}
	// The display comes after the result.
	types := rec.types()
	if types[len(types)-1] != MsgDisplayData || types[len(types)-2] != MsgExecuteResult {
		t.Errorf("messages %v", types)
	}
	// A cell without a prediction has no display.
	rec = recorder{}
	if _, err := x.Execute(context.Background(), Cell{Kind: KindSQL, Source: "SELECT 1"}, rec.emit); err != nil {
		t.Fatal(err)
	}
	if ps := predictions(t, &rec); len(ps) != 0 {
		t.Errorf("prediction display without a prediction: %v", ps)
	}
}

// TestPredictionFromRequest sends a prediction through the protocol: the
// execute_request's predict and guess members reach the display.
func TestPredictionFromRequest(t *testing.T) {
	var er ExecuteRequest
	if err := json.Unmarshal([]byte(`{"code": "SELECT 1 AS a", "predict": {"question": "q", "choices": ["small", "big"], "bounds": [0.5],
		"measure": "value(1, a)"}, "guess": {"choice": "big", "at": "2026-12-02T01:00:00Z"}}`), &er); err != nil {
		t.Fatal(err)
	}
	if er.Predict == nil || er.Guess == nil || er.Guess.Choice != "big" {
		t.Fatalf("request %+v", er)
	}
	x := newEngineExecutor(t)
	var rec recorder
	if _, err := x.Execute(context.Background(), Cell{Kind: KindSQL, Source: er.Code, Predict: er.Predict, Guess: er.Guess}, rec.emit); err != nil {
		t.Fatal(err)
	}
	p := predictions(t, &rec)[0]
	if p["guess_choice"] != "big" || p["measured_choice"] != "big" || p["measured"] != 1.0 || p["guess"] != nil {
		t.Errorf("display %v", p)
	}
}

func TestPredictionMeasurement(t *testing.T) {
	out := measurement(KindExperiment, map[string]any{"data": map[string]any{"rows": []any{map[string]any{"layout": "packed", "slowdown": 4.5}}}}, "x")
	r, err := predictResult(out)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := predict.Parse("rows[layout=packed].slowdown")
	if v, err := m.Eval(r); err != nil || v != 4.5 {
		t.Errorf("experiment: %v, %v", v, err)
	}
	out = measurement(KindLatency, map[string]any{"points": []any{map[string]any{"bytes": 4096, "ns": 1.5}}}, "x")
	r, _ = predictResult(out)
	m, _ = predict.Parse("points[last].ns")
	if v, err := m.Eval(r); err != nil || v != 1.5 {
		t.Errorf("latency: %v, %v", v, err)
	}
}

// TestPredictionOverRounds: an sql cell with reps=N runs N timed rounds
// after a warm-up, alternating its statements; its prediction is the
// median over the rounds with their spread, and its result keeps every
// round's statement times.
func TestPredictionOverRounds(t *testing.T) {
	x := newEngineExecutor(t)
	ratio := &predict.Spec{Question: "How many times slower is naive?", Unit: "×", Measure: "elapsed(1) / elapsed(2)"}
	const two = "SET group_by = 'naive'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC, 1 LIMIT 3; " +
		"SET group_by = 'radix'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC, 1 LIMIT 3"
	var rec recorder
	reply, err := x.Execute(context.Background(), Cell{Kind: KindSQL, ID: "r", Source: two, Predict: ratio, Attrs: map[string]string{"reps": "3"}}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	b := reply.Outcome.Data[MIMEResult].(*ResultBundle)
	if len(b.Rounds) != 3 {
		t.Fatalf("%d rounds in the result, want 3", len(b.Rounds))
	}
	for i, r := range b.Rounds {
		if len(r) != len(b.Statements) || r[1] <= 0 || r[3] <= 0 {
			t.Errorf("round %d times %v, want one per statement", i, r)
		}
	}
	p := predictions(t, &rec)[0]
	lo, hi, med := p["low"].(float64), p["high"].(float64), p["measured"].(float64)
	if p["rounds"] != 3.0 || lo > med || med > hi || !strings.Contains(p["verdict"].(string), "over 3 alternating runs") {
		t.Errorf("display %v", p)
	}
	for _, bad := range []string{"0", "21", "x"} {
		rec = recorder{}
		if _, err := x.Execute(context.Background(), Cell{Kind: KindSQL, Source: "SELECT 1", Attrs: map[string]string{"reps": bad}}, rec.emit); err == nil || !strings.Contains(err.Error(), "reps="+bad) {
			t.Errorf("reps=%s: err %v, want one naming the attribute", bad, err)
		}
	}
}

// TestBaselineWaitingShare: baseline=N prints, for the other queries,
// the share of their time per row beyond the in-cache baseline's, and
// adds it to the counters beside cpus-utilized.
func TestBaselineWaitingShare(t *testing.T) {
	x := newEngineExecutor(t)
	const src = "SET group_by = 'naive'; SELECT RegionID, count(*) FROM hits GROUP BY RegionID ORDER BY 2 DESC, 1 LIMIT 3; " +
		"SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC, 1 LIMIT 3"
	var rec recorder
	reply, err := x.Execute(context.Background(), Cell{Kind: KindSQL, Source: src, Attrs: map[string]string{"baseline": "1", "reps": "2", "counters": "on"}}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if out := rec.streamText(); !strings.Contains(out, "waiting on memory") || !strings.Contains(out, "query 2") {
		t.Errorf("no estimate in the output: %q", out)
	}
	b := reply.Outcome.Data[MIMEResult].(*ResultBundle)
	rep, ok := b.Counters.(*perf.Report)
	if !ok {
		t.Fatalf("counters %T, want a report", b.Counters)
	}
	if _, ok := rep.Total.Metric(MetricWaiting); !ok {
		t.Errorf("the counters lack %s: %+v", MetricWaiting, rep.Total.Derived)
	}
	for _, bad := range []string{"0", "x", "3"} {
		rec = recorder{}
		if _, err := x.Execute(context.Background(), Cell{Kind: KindSQL, Source: src, Attrs: map[string]string{"baseline": bad}}, rec.emit); err == nil || !strings.Contains(err.Error(), "baseline") {
			t.Errorf("baseline=%s: err %v, want one about the baseline", bad, err)
		}
	}
}

// TestPredictionTakesMeasuredVerdict: a measurement that judges its own
// spread passes its verdict, noisy or not, to the prediction's outcome.
func TestPredictionTakesMeasuredVerdict(t *testing.T) {
	tests := []struct {
		data  map[string]any
		want  string
		noisy bool
	}{
		{map[string]any{"slowdown": 1.0, "verdict": "too noisy to tell here", "noisy": true}, "too noisy to tell here", true},
		{map[string]any{"slowdown": 4.2, "verdict": "packed 4.2× slower", "noisy": false}, "packed 4.2× slower", false},
		{map[string]any{"slowdown": 4.2}, "", false},
	}
	for _, tt := range tests {
		v := tt.data["slowdown"].(float64)
		o := predict.Outcome{Measured: &v}
		measuredVerdict(&o, []predict.Result{{Data: tt.data}})
		if o.Verdict != tt.want || o.Noisy != tt.noisy {
			t.Errorf("%v: verdict %q noisy %v, want %q %v", tt.data, o.Verdict, o.Noisy, tt.want, tt.noisy)
		}
	}
}
