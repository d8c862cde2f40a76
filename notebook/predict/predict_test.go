package predict

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func sp(s string) *string { return &s }

func TestParseErrors(t *testing.T) {
	tests := []struct {
		measure string
		col     int
		msg     string
	}{
		{"", 1, "empty"},
		{"elapsed(1) /", 13, "ends where"},
		{"elapsed(0)", 9, "query number"},
		{"elapsed(1.5)", 9, "query number"},
		{"elapsed(1", 10, "to close elapsed("},
		{"elapse(1)", 1, "unknown function elapse"},
		{"value(1)", 8, "column name"},
		{"value(1, )", 10, "column name"},
		{"rows[", 6, "expected first, last or key=value"},
		{"rows[chains=]", 13, "expected a value for chains"},
		{"rows[last]", 11, "member name"},
		{"rows[last].", 12, "member name after '.'"},
		{"rows[chains=8.ns", 17, "to close the selector"},
		{"(1 + 2", 7, "to close '('"},
		{"1 2", 3, "unexpected '2'"},
		{"1 # 2", 3, "unexpected '#'"},
		{"# 2", 1, "cannot read '#'"},
		{`rows["x].a`, 6, "expected first"},
		{"elapsed(1) / points[last].ns", 1, "mixes SQL"},
		{strings.Repeat("(", 40) + "1" + strings.Repeat(")", 40), 34, "nested"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.measure)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *Error", tt.measure, err)
			continue
		}
		if pe.Col != tt.col || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("Parse(%q): column %d %q, want column %d containing %q", tt.measure, pe.Col, pe.Msg, tt.col, tt.msg)
		}
	}
}

func TestEval(t *testing.T) {
	var data any
	if err := json.Unmarshal([]byte(`{"points": [{"bytes": 4096, "ns": 1.25}, {"bytes": 268435456, "ns": 125}],
		"rows": [{"layout": "packed", "mode": "atomic", "slowdown": 6.5, "chains": 1},
		         {"layout": "padded-64", "mode": "plain", "slowdown": 1, "chains": 8}],
		"speedup": 42}`), &data); err != nil {
		t.Fatal(err)
	}
	sql := Result{Queries: []Query{
		{ElapsedNs: 3000, RowCount: 10, Scanned: 2000, Columns: []string{"UserID", "c"}, First: []*string{sp("7"), sp("12.5")}},
		{ElapsedNs: 2000, RowCount: 10, Columns: []string{"UserID", "c"}, First: []*string{sp("7"), nil}},
	}}
	failedSQL := Result{Queries: []Query{{Error: "MemoryLimit"}}}
	tests := []struct {
		measure string
		res     Result
		want    float64
		err     string
	}{
		{"elapsed(1) / elapsed(2)", sql, 1.5, ""},
		{"(elapsed(1) - elapsed(2)) / elapsed(2) * 100", sql, 50, ""},
		{"rows(2)", sql, 10, ""},
		{"elapsed(1) / scanned(1)", sql, 1.5, ""},
		{"scanned(2)", sql, 0, "read no table rows"},
		{"value(1, c)", sql, 12.5, ""},
		{`value(1, "c") * 2`, sql, 25, ""},
		{"-value(1, UserID) + 1e1", sql, 3, ""},
		{"value(2, c)", sql, 0, "no value"},
		{"value(1, d)", sql, 0, "no column d"},
		{"elapsed(3)", sql, 0, "ran 2 queries"},
		{"elapsed(1) / (elapsed(2) - 2000)", sql, 0, "division by zero"},
		{"points[last].ns / points[first].ns", Result{Data: data}, 100, ""},
		{"rows[layout=packed, mode=atomic].slowdown", Result{Data: data}, 6.5, ""},
		{`rows[layout="padded-64"].chains`, Result{Data: data}, 8, ""},
		{"rows[layout=padded-64].chains", Result{Data: data}, 8, ""},
		{"rows[chains=8].slowdown", Result{Data: data}, 1, ""},
		{"speedup / 2", Result{Data: data}, 21, ""},
		{"rows[chains=3].slowdown", Result{Data: data}, 0, "no element"},
		{"rows[first].layout", Result{Data: data}, 0, "not a number"},
		{"runs[first].x", Result{Data: data}, 0, `no list "runs"`},
		{"points[first].cycles", Result{Data: data}, 0, `no member "cycles"`},
		{"speedup", sql, 0, "no measurement"},
		{"failed(2)", sql, 0, ""},
		{"failed(1)", failedSQL, 1, ""},
		{"elapsed(1)", failedSQL, 0, "the query failed (MemoryLimit)"},
		{"failed(2)", failedSQL, 0, "ran 1 query"},
	}
	for _, tt := range tests {
		m, err := Parse(tt.measure)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.measure, err)
			continue
		}
		got, err := m.Eval(tt.res)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want one containing %q", tt.measure, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.measure, err)
		case tt.err == "" && got != tt.want:
			t.Errorf("%q = %v, want %v", tt.measure, got, tt.want)
		}
	}
}

func TestDecodeSpec(t *testing.T) {
	tests := []struct {
		json string
		err  string
	}{
		{`{"question": "q", "unit": "ns", "measure": "points[last].ns"}`, ""},
		{`{"question": "q", "choices": ["a", "b", "c"], "bounds": [0.9, 1.1], "measure": "elapsed(1)/elapsed(2)"}`, ""},
		{`{"question": "q", "unit": "ns", "measure": "x", "article": {"value": 100, "source": "Pivot"}, "check": "**ok**"}`, ""},
		{`{"question": "q", "unit": "ns", "mesure": "x"}`, `unknown field "mesure"`},
		{`{"question": "q", "unit": 3, "measure": "x"}`, `member "unit"`},
		{`{"question": "", "unit": "ns", "measure": "x"}`, "question is missing"},
		{`{"question": "q", "measure": "x"}`, "needs a unit"},
		{`{"question": "q", "unit": "ns", "choices": ["a", "b"], "bounds": [1], "measure": "x"}`, "both a unit and choices"},
		{`{"question": "q", "choices": ["a"], "measure": "x"}`, "1 choices"},
		{`{"question": "q", "choices": ["a", "b"], "measure": "x"}`, "need 1 bounds"},
		{`{"question": "q", "choices": ["a", "a"], "bounds": [1], "measure": "x"}`, "appears twice"},
		{`{"question": "q", "choices": ["a", "b", "c"], "bounds": [2, 1], "measure": "x"}`, "not ascending"},
		{`{"question": "q", "unit": "ns", "bounds": [1], "measure": "x"}`, "bounds are for choices"},
		{`{"question": "q", "unit": "ns", "measure": "elapsed("}`, "column 9"},
		{`{"question": "q", "unit": "ns", "measure": "2 * (3 + 4)"}`, "reads nothing"},
		{`{"question": "q", "unit": "ns", "measure": "x"`, "unexpected EOF"},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.json))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("Decode(%s): %v", tt.json, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Decode(%s) = %v, want an error containing %q", tt.json, err, tt.err)
		}
	}
}

func TestDecodeGuess(t *testing.T) {
	tests := []struct {
		json string
		err  string
	}{
		{`{"value": 3.5, "at": "2026-12-02T01:00:00Z"}`, ""},
		{`{"choice": "radix faster"}`, ""},
		{`{"value": 3.5, "choice": "a"}`, "both"},
		{`{}`, "neither"},
		{`{"value": "3"}`, `member "value"`},
		{`{"guess": 3}`, "unknown field"},
	}
	for _, tt := range tests {
		_, err := DecodeGuess([]byte(tt.json))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("DecodeGuess(%s): %v", tt.json, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("DecodeGuess(%s) = %v, want an error containing %q", tt.json, err, tt.err)
		}
	}
}

func TestCompare(t *testing.T) {
	num := &Spec{Question: "How much slower?", Unit: "×", Measure: "elapsed(1) / elapsed(2)",
		Article: &Article{Value: 1.33, Source: "Pivot"}, Check: "Expect 1.1–2×."}
	choice := &Spec{Question: "Which is faster?", Choices: []string{"radix", "same", "naive"}, Bounds: []float64{0.9, 1.1},
		Measure: "elapsed(2) / elapsed(1)"}
	three := 3.0
	res := Result{Queries: []Query{{ElapsedNs: 3000}, {ElapsedNs: 2000}}}

	o := Compare("c1", num, &Guess{Value: &three, At: "t"}, res, nil)
	if o.Cell != "c1" || o.Guess == nil || *o.Guess != 3 || o.Measured == nil || *o.Measured != 1.5 ||
		o.Article == nil || *o.Article != 1.33 || o.ArticleSource != "Pivot" || o.MeasuredChoice != nil || o.GuessAt != "t" {
		t.Errorf("numeric outcome = %+v", o)
	}
	if txt := o.Text(); !strings.Contains(txt, "your guess: 3.00×") || !strings.Contains(txt, "measured:   1.50×") || !strings.Contains(txt, "1.33× (Pivot)") {
		t.Errorf("text = %q", txt)
	}
	o = Compare("c1", choice, &Guess{Choice: "naive"}, res, nil)
	if o.GuessChoice == nil || *o.GuessChoice != "naive" || o.MeasuredChoice == nil || *o.MeasuredChoice != "radix" {
		t.Errorf("choice outcome = %+v", o)
	}
	// A guess that does not answer the spec is left out.
	o = Compare("c1", choice, &Guess{Value: &three}, res, nil)
	if o.Guess != nil || o.GuessChoice != nil {
		t.Errorf("mismatched guess kept: %+v", o)
	}
	o = Compare("c1", num, nil, Result{Queries: res.Queries[:1]}, nil)
	if o.Measured != nil || !strings.Contains(o.Note, "ran 1 query") {
		t.Errorf("missing statement: %+v", o)
	}
	o = Compare("c1", num, nil, res, errors.New("SQLError: boom"))
	if o.Measured != nil || !strings.Contains(o.Note, "the cell failed") {
		t.Errorf("failed cell: %+v", o)
	}
	// failed(N) grades a prediction that a query fails, on the cell that
	// failed there; it says 0 where the query answered.
	fails := &Spec{Question: "Will it answer?", Choices: []string{"it answers", "it fails"}, Bounds: []float64{0.5}, Measure: "failed(1)"}
	failedRes := Result{Queries: []Query{{Error: "MemoryLimit"}}}
	o = Compare("c1", fails, &Guess{Choice: "it fails"}, failedRes, errors.New("MemoryLimit: over"))
	if o.Measured == nil || *o.Measured != 1 || o.MeasuredChoice == nil || *o.MeasuredChoice != "it fails" || o.Note != "" {
		t.Errorf("failed(1) on the failed cell: %+v", o)
	}
	if txt := o.Text(); !strings.Contains(txt, "measured:   it fails\n") {
		t.Errorf("failed(1) text = %q, want the choice without its 0 or 1", txt)
	}
	o = Compare("c1", fails, nil, res, nil)
	if o.MeasuredChoice == nil || *o.MeasuredChoice != "it answers" {
		t.Errorf("failed(1) on a cell that answered: %+v", o)
	}
	if o = Compare("c1", fails, nil, Result{}, errors.New("SQLError: before any query")); o.Measured != nil {
		t.Errorf("failed(1) on a cell that failed before its query: %+v", o)
	}
	// The contract: every member is present, null where unknown.
	b, err := json.Marshal(Compare("c1", num, nil, Result{}, errors.New("x")))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cell", "question", "unit", "choices", "guess", "guess_choice", "measured", "measured_choice", "article", "article_source", "check"} {
		if _, ok := m[k]; !ok {
			t.Errorf("outcome JSON lacks %q: %s", k, b)
		}
	}
	if m["choices"] == nil {
		t.Errorf("choices is null, want []: %s", b)
	}
}

func TestChoice(t *testing.T) {
	s := &Spec{Choices: []string{"a", "b", "c"}, Bounds: []float64{1, 2}}
	for v, want := range map[float64]string{0.5: "a", 1: "b", 1.5: "b", 2: "c", 9: "c"} {
		if got := s.Choice(v); got != want {
			t.Errorf("Choice(%v) = %q, want %q", v, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"elapsed(1) / elapsed(2)", "rows[layout=packed, mode=atomic].slowdown", `value(1, "c") * -2e3`,
		"points[last].ns / points[first].ns", "((1))", "rows[a=\"x\\\"y\"].b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Col < 1 || pe.Col > len(s)+1 && len(s) <= maxMeasure {
				t.Fatalf("Parse(%q): error %v has no valid column", s, err)
			}
			return
		}
		// Evaluation never panics, whatever the result.
		_, _ = m.Eval(Result{})
		_, _ = m.Eval(Result{Queries: []Query{{Columns: []string{"a"}, First: []*string{nil}}}, Data: map[string]any{"rows": []any{1, map[string]any{}}}})
	})
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"question": "q", "choices": ["a", "b"], "bounds": [1], "measure": "elapsed(1)/elapsed(2)"}`), []byte(`{"choice": "a"}`))
	f.Add([]byte(`{"question": "q", "unit": "ns", "measure": "points[last].ns", "article": {"value": 1, "source": "s"}}`), []byte(`{"value": 2}`))
	f.Fuzz(func(t *testing.T, spec, guess []byte) {
		s, err := Decode(spec)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Decode accepted a spec that does not validate: %v", err)
		}
		g, err := DecodeGuess(guess)
		if err != nil {
			g = nil
		}
		o := Compare("c", s, g, Result{}, nil)
		if o.Measured != nil {
			t.Fatalf("measured %v from an empty result", *o.Measured)
		}
		_ = o.Text()
	})
}

// TestCompareSelfNoisy: a measurement that says its own rounds were too
// noisy (the branches experiment under load) is not graded, whatever its
// median; one that does not say so is.
func TestCompareSelfNoisy(t *testing.T) {
	spec := &Spec{Question: "How many times as long?", Unit: "×", Measure: "slowdown"}
	two := 2.0
	tests := []struct {
		name        string
		data        map[string]any
		noisy       bool
		verdictPart string
	}{
		{"noisy with its spread", map[string]any{"slowdown": 1.67, "noisy": true, "low": 0.2, "high": 66.52}, true, "too noisy to tell here: the measurement's own rounds disagreed (0.2× to 66.5×)"},
		{"noisy without a spread", map[string]any{"slowdown": 1.67, "noisy": true}, true, "Run it again on a quieter machine."},
		{"steady", map[string]any{"slowdown": 4.85, "noisy": false, "low": 4.73, "high": 4.98}, false, ""},
		{"no flag", map[string]any{"slowdown": 4.85}, false, ""},
	}
	for _, tt := range tests {
		o := Compare("c", spec, &Guess{Value: &two}, Result{Data: tt.data}, nil)
		if o.Measured == nil || *o.Measured != tt.data["slowdown"] {
			t.Errorf("%s: measured %v", tt.name, o.Measured)
		}
		if o.Noisy != tt.noisy || !strings.Contains(o.Verdict, tt.verdictPart) || (!tt.noisy && o.Verdict != "") {
			t.Errorf("%s: noisy %v, verdict %q; want noisy %v and %q", tt.name, o.Noisy, o.Verdict, tt.noisy, tt.verdictPart)
		}
	}
	// Rounds judge the spread themselves: a last round that called itself
	// noisy does not make steady rounds noisy.
	rounds := []Result{{Data: map[string]any{"slowdown": 5.0}}, {Data: map[string]any{"slowdown": 5.2}}, {Data: map[string]any{"slowdown": 5.1, "noisy": true}}}
	if o := CompareRounds("c", spec, nil, rounds, nil); o.Noisy || !strings.Contains(o.Verdict, "5.10× (5.00×–5.20×") {
		t.Errorf("rounds: noisy %v, verdict %q", o.Noisy, o.Verdict)
	}
}

// TestCompareRounds: over alternating repetitions the measured value is
// the median, the verdict states the spread, and a ratio whose rounds
// fall on both sides of 1 (or that vary more than twice) is too noisy to
// give a direction.
func TestCompareRounds(t *testing.T) {
	ratio := &Spec{Question: "How much slower?", Unit: "×", Measure: "elapsed(1) / elapsed(2)"}
	ns := &Spec{Question: "ns per row?", Unit: "ns", Measure: "elapsed(1) / 100"}
	round := func(a, b int64) Result { return Result{Queries: []Query{{ElapsedNs: a}, {ElapsedNs: b}}} }
	tests := []struct {
		name        string
		spec        *Spec
		rounds      []Result
		median      float64
		noisy       bool
		verdictPart string
	}{
		{"steady ratio", ratio, []Result{round(160, 100), round(150, 100), round(170, 100), round(140, 100), round(180, 100)}, 1.6, false, "1.60× (1.40×–1.80× over 5 alternating runs)"},
		{"crosses one", ratio, []Result{round(120, 100), round(90, 100), round(130, 100)}, 1.2, true, "too noisy to tell here"},
		{"wide spread", ns, []Result{round(1000, 1), round(2500, 1), round(1200, 1)}, 12, true, "differed by more than twice"},
		{"even count", ns, []Result{round(1000, 1), round(1200, 1)}, 11, false, "11.0 ns (10.0 ns–12.0 ns over 2"},
	}
	for _, tt := range tests {
		o := CompareRounds("c", tt.spec, nil, tt.rounds, nil)
		if o.Measured == nil || math.Abs(*o.Measured-tt.median) > 1e-9 {
			t.Errorf("%s: measured %v, want the median %v", tt.name, o.Measured, tt.median)
			continue
		}
		if o.Noisy != tt.noisy || !strings.Contains(o.Verdict, tt.verdictPart) || o.Rounds != len(tt.rounds) {
			t.Errorf("%s: noisy %v, verdict %q, rounds %d; want noisy %v and %q", tt.name, o.Noisy, o.Verdict, o.Rounds, tt.noisy, tt.verdictPart)
		}
		if !strings.Contains(o.Text(), "verdict:") {
			t.Errorf("%s: text lacks the verdict: %q", tt.name, o.Text())
		}
	}
	if o := CompareRounds("c", ratio, nil, []Result{round(150, 100)}, nil); o.Verdict != "" || o.Rounds != 0 || *o.Measured != 1.5 {
		t.Errorf("one round: %+v", o)
	}
	if o := CompareRounds("c", ratio, nil, []Result{{}, round(150, 100)}, nil); o.Measured != nil || !strings.Contains(o.Note, "round 1 of 2") {
		t.Errorf("a round without the query: %+v", o)
	}
}
