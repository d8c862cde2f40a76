package kernel

import (
	"encoding/json"
	"fmt"

	"cachebook/engine"
	"cachebook/engine/sql"
	"cachebook/notebook/predict"
)

// This file is the kernel's half of predict-then-run (package
// notebook/predict): after a cell that carries a prediction has run, the
// kernel derives the measured value from the cell's own result and shows
// it beside the learner's guess and the article's figure, in one
// display_data of type MIMEPrediction.

// MIMEPrediction is the type of the prediction display; its value is a
// predict.Outcome.
const MIMEPrediction = predict.MIME

// predictRounds turns a cell's outcome into what a measure reads, one
// Result a timed round: an SQL cell run with reps=N has a Result for each
// round, whose queries take that round's times; any other outcome has one.
func predictRounds(out *Outcome) ([]predict.Result, error) {
	last, err := predictResult(out)
	if err != nil || out == nil || out.Data == nil {
		return []predict.Result{last}, err
	}
	b, ok := out.Data[MIMEResult].(*ResultBundle)
	if !ok || b == nil || len(b.Rounds) < 2 {
		return []predict.Result{last}, nil
	}
	rounds := make([]predict.Result, 0, len(b.Rounds))
	for _, times := range b.Rounds {
		if len(times) != len(b.Statements) {
			return []predict.Result{last}, nil // a round the bundle cannot be matched with
		}
		var r predict.Result
		q := 0
		for i, st := range b.Statements {
			if len(st.Columns) == 0 {
				continue
			}
			c := last.Queries[q]
			c.ElapsedNs = times[i]
			r.Queries = append(r.Queries, c)
			q++
		}
		rounds = append(rounds, r)
	}
	return rounds, nil
}

// predictResult turns a cell's outcome into what a measure reads: the
// queries of an SQL result (statements that returned a table), or the
// measurement as decoded JSON (an experiment's "data").
func predictResult(out *Outcome) (predict.Result, error) {
	var r predict.Result
	if out == nil || out.Data == nil {
		return r, nil
	}
	if b, ok := out.Data[MIMEResult].(*ResultBundle); ok && b != nil {
		for _, st := range b.Statements {
			if len(st.Columns) == 0 {
				continue // SET, RESET: no table
			}
			q := predict.Query{ElapsedNs: st.ElapsedNs, RowCount: st.RowCount, Scanned: scanned(st.Plan)}
			for _, c := range st.Columns {
				q.Columns = append(q.Columns, c.Name)
			}
			if len(st.Rows) > 0 {
				q.First = st.Rows[0]
			}
			r.Queries = append(r.Queries, q)
		}
		return r, nil
	}
	m, ok := out.Data[MIMEMeasurement]
	if !ok {
		return r, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return r, fmt.Errorf("encode the measurement: %w", err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return r, fmt.Errorf("decode the measurement: %w", err)
	}
	kind, _ := v["kind"].(string)
	data := v[kind]
	if kind == KindExperiment {
		if obj, ok := data.(map[string]any); ok {
			data = obj["data"]
		}
	}
	r.Data = data
	return r, nil
}

// emitPrediction sends the prediction display of cell, which ended with
// out and (when it failed) ec.
func (x *Executor) emitPrediction(cell Cell, out *Outcome, ec *ErrorContent, session string, emit func(Message)) {
	if cell.Predict == nil {
		return
	}
	var failed error
	if ec != nil {
		failed = fmt.Errorf("%s: %s", ec.Ename, ec.Evalue)
	}
	res, err := predictRounds(out)
	if err != nil && failed == nil {
		failed = err
	}
	if q, ok := failedQuery(cell, ec); ok && len(res) == 1 {
		res[0].Queries = append(res[0].Queries, q) // what failed(N) reads
	}
	var o predict.Outcome
	if verr := cell.Predict.Validate(); verr != nil {
		o = predict.Outcome{Cell: cell.ID, Question: cell.Predict.Question, Unit: cell.Predict.Unit,
			Choices: append([]string{}, cell.Predict.Choices...), Check: cell.Predict.Check, Measure: cell.Predict.Measure,
			Note: "no measured value: " + verr.Error()}
	} else {
		o = predict.CompareRounds(cell.ID, cell.Predict, cell.Guess, res, failed)
		measuredVerdict(&o, res)
	}
	emit(NewMessage(ChannelIOPub, MsgDisplayData, session, Header{}, DisplayData{
		Data:     map[string]any{MIMEPrediction: o, MIMEText: o.Text()},
		Metadata: map[string]any{},
	}))
}

// failedQuery returns the query an sql cell failed in, as a measure
// sees it (its error's name, nothing else), when the statement the cell
// stopped at is a query (not SET or RESET).
func failedQuery(cell Cell, ec *ErrorContent) (predict.Query, bool) {
	if ec == nil || ec.StatementIndex == nil || cell.Kind != KindSQL {
		return predict.Query{}, false
	}
	stmts, err := sql.Parse(cell.Source)
	if i := *ec.StatementIndex; err != nil || i < 0 || i >= len(stmts) {
		return predict.Query{}, false
	}
	switch stmts[*ec.StatementIndex].(type) {
	case *sql.Set, *sql.Reset:
		return predict.Query{}, false
	}
	return predict.Query{Error: ec.Ename}, true
}

// measuredVerdict gives o the verdict a measurement states of its own
// key comparison (its "verdict" and "noisy" members: experiments, the
// bandwidth cell and the sweep alternate their sides and judge the
// spread), so that a prediction over a noisy run is not graded either.
func measuredVerdict(o *predict.Outcome, rounds []predict.Result) {
	if o.Measured == nil || o.Verdict != "" || len(rounds) != 1 {
		return
	}
	d, ok := rounds[0].Data.(map[string]any)
	if !ok {
		return
	}
	if v, ok := d["verdict"].(string); ok && v != "" {
		o.Verdict = v
		o.Noisy, _ = d["noisy"].(bool)
	}
}

// scanned is the number of rows a query's plan read from its tables: the
// rows its table scans (SEQ_SCAN nodes) took in. A query without a table
// (SELECT 1) scans none.
func scanned(n *engine.PlanNode) int64 {
	if n == nil {
		return 0
	}
	if n.Name == "SEQ_SCAN" {
		return max(n.RowsIn, n.Rows)
	}
	var sum int64
	for _, c := range n.Children {
		sum += scanned(c)
	}
	return sum
}
