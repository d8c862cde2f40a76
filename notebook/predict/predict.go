// Package predict is cachebook's predict-then-run: a prediction attached to
// a code cell (a question, the unit or the choices of the answer, how the
// measured value is derived from the cell's own result, the source
// article's figure and a check text), the learner's guess, and the
// comparison of the two that the kernel shows after the run.
//
// A notebook keeps both in the cell's metadata comment (package notebook):
//
//	<!-- cachebook: {"id": "naive-vs-radix", "predict": {"question": "How many times slower is naive than radix?",
//	  "unit": "×", "measure": "elapsed(1) / elapsed(2)", "article": {"value": 1.33, "source": "Pivot, 17.6 M groups"},
//	  "check": "1.1–2× when the table is several times the L3 ..."},
//	  "guess": {"value": 1.5, "at": "2026-12-02T01:00:00Z"}} -->
//
// A spec has either a unit (a number is guessed) or choices (one is
// picked); a choices spec maps the measured number to a choice with
// bounds: len(choices)-1 ascending numbers, the measured value v giving
// choices[i] where i is the number of bounds ≤ v.
//
// # Measures
//
// A measure is an arithmetic expression (+, -, *, / and parentheses, the
// usual precedence) over numbers and references to the cell's result:
//
//	elapsed(N)        sql: the elapsed time in ns of the cell's N-th query
//	rows(N)           sql: the row count of the N-th query
//	scanned(N)        sql: the rows the N-th query read from its tables
//	failed(N)         sql: 1 if the N-th query failed (the cell stopped there), 0 if it answered
//	value(N, column)  sql: the number in the first row of column of the N-th query
//	field             other kinds: a number member of the measurement
//	array[sel].field  other kinds: field of the element of array that sel picks
//
// A query is a statement that returns a table (SELECT, EXPLAIN): SET and
// RESET statements are not counted, so in
// "SET group_by='naive'; SELECT …; SET group_by='radix'; SELECT …" the
// ratio of the two runs is elapsed(1) / elapsed(2). N counts from 1.
//
// A cell that fails has no measured value, except for a measure that asks
// whether a query failed: failed(N) with choices such as ["it answers",
// "it fails"] and bounds [0.5] grades a prediction that a query fails.
//
// The measurement of a latency, bandwidth or sweep cell is its measurement
// JSON (a latency curve has "points", each with "bytes" and "ns"); that of
// an experiment cell is its result's "data" (false-sharing has "rows" with
// "layout", "mode", "slowdown", ...). A selector sel is first, last, or
// one or more conditions key=value separated by commas; it picks the first
// element whose members all equal the values (compared as text, so
// chains=8 matches the number 8; a value may be a Go-quoted string). For
// example points[last].ns / points[first].ns, or
// rows[layout=packed, mode=atomic].slowdown.
package predict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// MIME is the type of the display the kernel emits after a cell with a
// prediction has run; its value is an Outcome.
const MIME = "application/vnd.cachebook.prediction+json"

// Spec is a cell's prediction: the "predict" member of its metadata.
type Spec struct {
	// Question is what the learner is asked.
	Question string `json:"question"`
	// Unit is the unit of a numeric answer ("ns", "×", "%", "GB/s", ...).
	Unit string `json:"unit,omitempty"`
	// Choices are the answers of a multiple-choice question.
	Choices []string `json:"choices,omitempty"`
	// Bounds map the measured value to a choice (see the package doc).
	Bounds []float64 `json:"bounds,omitempty"`
	// Measure derives the measured value from the cell's result.
	Measure string `json:"measure"`
	// Article is the source article's figure, if it has one.
	Article *Article `json:"article,omitempty"`
	// Check is Markdown shown after the run: the range to expect on this
	// kind of machine and on the article's, and what a surprise means.
	Check string `json:"check,omitempty"`
}

// Article is a figure from a source article.
type Article struct {
	Value  float64 `json:"value"`
	Source string  `json:"source"`
}

// Guess is the learner's committed answer: the "guess" member of a cell's
// metadata. Exactly one of Value and Choice is set.
type Guess struct {
	Value  *float64 `json:"value,omitempty"`
	Choice string   `json:"choice,omitempty"`
	// At is when the guess was committed (RFC 3339).
	At string `json:"at,omitempty"`
}

// Limits on a spec, so that metadata cannot grow without bound.
const (
	maxText    = 4096
	maxChoices = 16
)

// Decode reads a spec from JSON (the value of the "predict" member) and
// validates it. Unknown members are an error, so that a misspelt
// "mesure" does not go unnoticed.
func Decode(data []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("predict: %w", jsonCause(err))
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// jsonCause rewords encoding/json's errors with the member they concern.
func jsonCause(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("member %q: want %s, have a JSON %s (offset %d)", te.Field, te.Type, te.Value, te.Offset)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at offset %d: %v", se.Offset, err)
	}
	return err
}

// DecodeGuess reads a guess from JSON (the value of the "guess" member).
func DecodeGuess(data []byte) (*Guess, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var g Guess
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("predict: guess: %w", jsonCause(err))
	}
	switch {
	case g.Value != nil && g.Choice != "":
		return nil, errors.New("predict: guess: has both a value and a choice")
	case g.Value == nil && g.Choice == "":
		return nil, errors.New("predict: guess: has neither a value nor a choice")
	case g.Value != nil && (math.IsNaN(*g.Value) || math.IsInf(*g.Value, 0)):
		return nil, errors.New("predict: guess: value is not a finite number")
	case len(g.Choice) > maxText || len(g.At) > 64:
		return nil, errors.New("predict: guess: too long")
	}
	return &g, nil
}

// Validate checks a spec: a question, a unit or choices (not both), bounds
// that fit the choices, and a measure that parses.
func (s *Spec) Validate() error {
	switch {
	case strings.TrimSpace(s.Question) == "":
		return errors.New("predict: the question is missing")
	case s.Unit != "" && len(s.Choices) > 0:
		return errors.New("predict: has both a unit and choices; a prediction is a number or a choice")
	case s.Unit == "" && len(s.Choices) == 0:
		return errors.New("predict: needs a unit (a number is guessed) or choices (one is picked)")
	case len(s.Choices) == 1 || len(s.Choices) > maxChoices:
		return fmt.Errorf("predict: %d choices: want 2 to %d", len(s.Choices), maxChoices)
	case len(s.Choices) > 0 && len(s.Bounds) != len(s.Choices)-1:
		return fmt.Errorf("predict: %d choices need %d bounds (the measured value v picks choices[i], i the number of bounds ≤ v), have %d",
			len(s.Choices), len(s.Choices)-1, len(s.Bounds))
	case len(s.Choices) == 0 && len(s.Bounds) > 0:
		return errors.New("predict: bounds are for choices, and there are none")
	case len(s.Question) > maxText || len(s.Check) > maxText || len(s.Unit) > 32:
		return errors.New("predict: the question, check or unit is too long")
	case s.Article != nil && (math.IsNaN(s.Article.Value) || math.IsInf(s.Article.Value, 0)):
		return errors.New("predict: the article's value is not a finite number")
	case s.Article != nil && len(s.Article.Source) > maxText:
		return errors.New("predict: the article's source is too long")
	}
	seen := map[string]bool{}
	for _, c := range s.Choices {
		if strings.TrimSpace(c) == "" || len(c) > maxText {
			return fmt.Errorf("predict: choice %q is empty or too long", c)
		}
		if seen[c] {
			return fmt.Errorf("predict: choice %q appears twice", c)
		}
		seen[c] = true
	}
	for i := 1; i < len(s.Bounds); i++ {
		if !(s.Bounds[i-1] < s.Bounds[i]) {
			return fmt.Errorf("predict: bounds %v are not ascending", s.Bounds)
		}
	}
	m, err := Parse(s.Measure)
	if err != nil {
		return err
	}
	if !m.UsesSQL() && !m.UsesData() {
		return fmt.Errorf("predict: measure %q reads nothing of the cell's result", s.Measure)
	}
	return nil
}

// CheckGuess reports whether g answers s: a value for a unit, one of the
// choices for choices.
func (s *Spec) CheckGuess(g *Guess) error {
	switch {
	case g == nil:
		return nil
	case len(s.Choices) > 0 && !slices.Contains(s.Choices, g.Choice):
		return fmt.Errorf("predict: guess %q is not one of the choices %q", g.Choice, s.Choices)
	case len(s.Choices) == 0 && g.Value == nil:
		return fmt.Errorf("predict: the question wants a number in %s, and the guess is a choice", s.Unit)
	}
	return nil
}

// Choice returns the choice a measured value falls in ("" without
// choices).
func (s *Spec) Choice(v float64) string {
	if len(s.Choices) == 0 || len(s.Bounds) != len(s.Choices)-1 {
		return ""
	}
	i := 0
	for _, b := range s.Bounds {
		if b <= v {
			i++
		}
	}
	return s.Choices[i]
}

// Outcome is the prediction display's value: the question, the guess, the
// measured value and the article's figure side by side. Its members are a
// contract with the clients (the notebook UI, classroom mode): they may be
// added to, never renamed. A value that is not known is null; Note says
// why the measured value is missing.
type Outcome struct {
	Cell           string   `json:"cell"`
	Question       string   `json:"question"`
	Unit           string   `json:"unit"`
	Choices        []string `json:"choices"`
	Guess          *float64 `json:"guess"`
	GuessChoice    *string  `json:"guess_choice"`
	Measured       *float64 `json:"measured"`
	MeasuredChoice *string  `json:"measured_choice"`
	Article        *float64 `json:"article"`
	ArticleSource  string   `json:"article_source"`
	Check          string   `json:"check"`
	// Measure is the spec's measure, as run.
	Measure string `json:"measure"`
	// GuessAt is when the guess was committed ("" without one).
	GuessAt string `json:"guess_at,omitempty"`
	// Note says why Measured is null.
	Note string `json:"note,omitempty"`
	// Rounds is how many alternating repetitions the measured value is
	// the median of (0 or 1: a single run), Low and High their extremes.
	Rounds int      `json:"rounds,omitempty"`
	Low    *float64 `json:"low,omitempty"`
	High   *float64 `json:"high,omitempty"`
	// Verdict says how sure the measurement is: the median with its
	// spread, or that it was too noisy to tell (see CompareRounds).
	Verdict string `json:"verdict,omitempty"`
	// Noisy is set when Verdict says the spread was too wide to conclude.
	Noisy bool `json:"noisy,omitempty"`
}

// CompareRounds is Compare over several alternating repetitions of a
// cell (rounds, each a Result): the measured value is the median of the
// rounds' values, and the verdict states its spread. A ratio (unit ×)
// whose rounds fall on both sides of 1 says "too noisy to tell" rather
// than a direction, as does any measure whose extremes differ by more
// than twice: a busy machine may make the verdict say less, never the
// opposite.
func CompareRounds(cell string, s *Spec, g *Guess, rounds []Result, failed error) Outcome {
	if len(rounds) <= 1 {
		var r Result
		if len(rounds) == 1 {
			r = rounds[0]
		}
		return Compare(cell, s, g, r, failed)
	}
	o := Compare(cell, s, g, rounds[len(rounds)-1], failed)
	if o.Measured == nil {
		return o
	}
	m, _ := Parse(s.Measure) // Compare parsed it
	vals := make([]float64, 0, len(rounds))
	for _, r := range rounds {
		v, err := m.Eval(r)
		if err != nil {
			o.Measured, o.MeasuredChoice = nil, nil
			o.Note = fmt.Sprintf("no measured value: round %d of %d: %v", len(vals)+1, len(rounds), err)
			return o
		}
		vals = append(vals, v)
	}
	slices.Sort(vals)
	med := vals[len(vals)/2]
	if len(vals)%2 == 0 {
		med = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
	}
	lo, hi := vals[0], vals[len(vals)-1]
	o.Measured, o.Low, o.High, o.Rounds = &med, &lo, &hi, len(vals)
	o.MeasuredChoice = nil
	if c := s.Choice(med); c != "" {
		o.MeasuredChoice = &c
	}
	// The rounds judge the spread, whatever the last one said of itself.
	o.Noisy = false
	spread := fmt.Sprintf("%s–%s over %d alternating runs", FormatValue(lo)+unitSuffix(s.Unit), FormatValue(hi)+unitSuffix(s.Unit), len(vals))
	switch {
	case isRatio(s.Unit) && lo < 1 && hi > 1:
		o.Noisy = true
		o.Verdict = fmt.Sprintf("too noisy to tell here: the ratio fell on both sides of 1 (%s). Run it again on a quieter machine.", spread)
	case lo > 0 && hi > 2*lo:
		o.Noisy = true
		o.Verdict = fmt.Sprintf("too noisy to tell here: the runs differed by more than twice (%s). Run it again on a quieter machine.", spread)
	default:
		o.Verdict = fmt.Sprintf("%s (%s)", FormatValue(med)+unitSuffix(s.Unit), spread)
	}
	return o
}

// isRatio reports whether unit is that of a ratio of two sides.
func isRatio(unit string) bool { return unit == "×" || unit == "x" }

// Compare evaluates s's measure on res and returns the outcome for the
// cell with the given id. failed, when not nil, is why the cell did not
// produce a result (its error); the measured value is then null.
func Compare(cell string, s *Spec, g *Guess, res Result, failed error) Outcome {
	o := Outcome{Cell: cell, Question: s.Question, Unit: s.Unit, Choices: append([]string{}, s.Choices...),
		Check: s.Check, Measure: s.Measure}
	if s.Article != nil {
		v := s.Article.Value
		o.Article, o.ArticleSource = &v, s.Article.Source
	}
	if g != nil && s.CheckGuess(g) == nil {
		if g.Value != nil {
			v := *g.Value
			o.Guess = &v
		} else {
			c := g.Choice
			o.GuessChoice = &c
		}
		o.GuessAt = g.At
	}
	m, err := Parse(s.Measure)
	switch {
	case failed != nil && (err != nil || !m.ReadsFailure()):
		o.Note = "no measured value: the cell failed (" + failed.Error() + ")"
	case err != nil:
		o.Note = "no measured value: " + err.Error()
	default:
		v, err := m.Eval(res)
		if err != nil && failed != nil {
			o.Note = "no measured value: the cell failed (" + failed.Error() + ")"
			break
		}
		if err != nil {
			o.Note = "no measured value: " + err.Error()
			break
		}
		o.Measured = &v
		if c := s.Choice(v); c != "" {
			o.MeasuredChoice = &c
		}
		o.Noisy, o.Verdict = selfNoisy(res.Data, s.Unit)
	}
	return o
}

// selfNoisy reads a measurement that judges its own spread: one whose
// top-level "noisy" is true (an experiment whose rounds fell on both
// sides of 1, say) is too noisy to grade a guess, whatever its median.
// The verdict gives the rounds' "low" and "high" where it has them.
func selfNoisy(data any, unit string) (bool, string) {
	d, ok := data.(map[string]any)
	if !ok || d["noisy"] != true {
		return false, ""
	}
	v := "too noisy to tell here: the measurement's own rounds disagreed"
	lo, okLo := number(d["low"])
	hi, okHi := number(d["high"])
	if okLo && okHi {
		v += fmt.Sprintf(" (%s to %s)", FormatValue(lo)+unitSuffix(unit), FormatValue(hi)+unitSuffix(unit))
	}
	return true, v + ". Run it again on a quieter machine."
}

// Text renders the outcome as plain text, as the CLI and text/plain
// consumers see it.
func (o Outcome) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Prediction: %s\n", o.Question)
	num := func(v *float64) string {
		if v == nil {
			return "—"
		}
		return FormatValue(*v) + unitSuffix(o.Unit)
	}
	if len(o.Choices) > 0 {
		guess, meas := "—", "—"
		if o.GuessChoice != nil {
			guess = *o.GuessChoice
		}
		if o.MeasuredChoice != nil {
			meas = *o.MeasuredChoice
		}
		if m, err := Parse(o.Measure); o.Measured != nil && (err != nil || !m.ReadsFailure()) {
			meas += " (" + FormatValue(*o.Measured) + ")" // failed(N)'s 0 or 1 says nothing more
		}
		fmt.Fprintf(&b, "  your guess: %s\n  measured:   %s\n", guess, meas)
	} else {
		fmt.Fprintf(&b, "  your guess: %s\n  measured:   %s\n", num(o.Guess), num(o.Measured))
	}
	if o.Article != nil {
		fmt.Fprintf(&b, "  article:    %s%s (%s)\n", FormatValue(*o.Article), unitSuffix(o.Unit), o.ArticleSource)
	}
	if o.Verdict != "" {
		fmt.Fprintf(&b, "  verdict:    %s\n", o.Verdict)
	}
	if o.Note != "" {
		fmt.Fprintf(&b, "  %s\n", o.Note)
	}
	if o.Check != "" {
		fmt.Fprintf(&b, "%s\n", o.Check)
	}
	return b.String()
}

func unitSuffix(u string) string {
	switch {
	case u == "":
		return ""
	case u == "×" || u == "%" || u == "x":
		return u
	}
	return " " + u
}

// FormatValue formats a measured or guessed value with three significant
// digits (more for large integers).
func FormatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
