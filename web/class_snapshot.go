package web

// The class view's data: what GET /api/class and every snapshot event
// of /api/class/events carry.

import (
	"sort"
	"time"
)

// ClassSnapshot is the class view's data (GET /api/class, and every
// "snapshot" event of /api/class/events).
type ClassSnapshot struct {
	Class       string               `json:"class"`
	Code        string               `json:"code"`
	Learners    []LearnerView        `json:"learners"`
	Median      []curvePoint         `json:"median"`
	Predictions []PredictionView     `json:"predictions"`
	SQL         map[string][]SQLView `json:"sql"`
	Locks       []string             `json:"locks"`
	Push        map[string]any       `json:"push,omitempty"`
	Stats       ClassStats           `json:"stats"`
	Joins       JoinStats            `json:"joins"`
	// Measuring is the measurement the server takes for the class in
	// the background now (nil: none); Prepared the cells it measures for
	// the class and their shared results; KeptFresh tells that it
	// measures them again before they expire while learners are
	// connected (ClassConfig.Prepare).
	Measuring *BackgroundView `json:"measuring,omitempty"`
	Prepared  []PreparedView  `json:"prepared,omitempty"`
	KeptFresh bool            `json:"kept_fresh,omitempty"`
}

// JoinStats is what the class view shows of the joins: the roster's
// limit and whether it is reached, the joins of the last minute with the
// latest's time, and the refused joins by why.
type JoinStats struct {
	MaxLearners int          `json:"max_learners"`
	Full        bool         `json:"full"`
	LastMinute  int          `json:"last_minute"`
	Latest      string       `json:"latest,omitempty"`
	Refused     JoinRefusals `json:"refused"`
}

// LearnerView is one row of the roster.
type LearnerView struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Connected   bool    `json:"connected"`
	Running     string  `json:"running,omitempty"`
	RunningCell string  `json:"running_cell,omitempty"`
	Queued      bool    `json:"queued"`
	Pending     int     `json:"pending"`
	Cells       int     `json:"cells"`
	MeasWaits   int     `json:"measurement_waits"`
	LastWaitMs  float64 `json:"last_measurement_wait_ms"`
	// Curve is the learner's latest latency curve measured on the
	// server; CurveSharedAt, when set, says it is the class's shared
	// measurement taken then (RFC 3339) rather than a run of its own.
	Curve         []curvePoint `json:"curve,omitempty"`
	CurveSharedAt string       `json:"curve_shared_at,omitempty"`
	// Own is its latest curve measured in its own browser.
	Own *OwnView `json:"own,omitempty"`
	// QueuePosition is the learner's place among the learners waiting
	// for the measurement core (1: next; 0: not waiting there);
	// WaitingShared tells that it waits for a shared run in progress
	// instead. ExpectedWaitMs estimates how long it still waits.
	QueuePosition  int     `json:"queue_position,omitempty"`
	WaitingShared  bool    `json:"waiting_shared,omitempty"`
	ExpectedWaitMs float64 `json:"expected_wait_ms,omitempty"`
	WaitedMs       float64 `json:"waited_ms,omitempty"`
}

// OwnView is a curve a learner measured in their own browser.
type OwnView struct {
	Curve   []curvePoint `json:"curve"`
	Machine MachineInfo  `json:"machine"`
	At      string       `json:"at"`
}

// PredictionView is the class's guesses for one prediction cell.
type PredictionView struct {
	Cell           string   `json:"cell"`
	Question       string   `json:"question,omitempty"`
	Unit           string   `json:"unit,omitempty"`
	Choices        []string `json:"choices,omitempty"`
	Guesses        []Guess  `json:"guesses"`
	MeasuredChoice string   `json:"measured_choice,omitempty"`
	Article        any      `json:"article,omitempty"`
}

// Guess is one learner's guess and measurement for a prediction cell.
type Guess struct {
	Learner        string   `json:"learner"`
	Guess          *float64 `json:"guess,omitempty"`
	GuessChoice    string   `json:"guess_choice,omitempty"`
	Measured       *float64 `json:"measured,omitempty"`
	MeasuredChoice string   `json:"measured_choice,omitempty"`
	// Source is where the measured value came from: SourceServer or
	// SourceOwn.
	Source string `json:"source"`
}

// SQLView is one learner's latest run of an SQL cell.
type SQLView struct {
	Learner string `json:"learner"`
	sqlResult
}

// ClassStats sums up the class's cells.
type ClassStats struct {
	Cells            int     `json:"cells"`
	P50Ms            float64 `json:"p50_ms"`
	P99Ms            float64 `json:"p99_ms"`
	MinPerLearner    int     `json:"min_per_learner"`
	MaxPerLearner    int     `json:"max_per_learner"`
	MeasurementWaits int     `json:"measurement_waits"`
	DroppedFrames    int     `json:"dropped_frames"`
	// Waiting counts the learners whose measurement cell waits now.
	Waiting int `json:"waiting"`
	// ServerCurves, SharedCurves and OwnCurves count the learners'
	// latest latency curves: measured on the server by their own cell,
	// the class's shared server measurement, and their own machines.
	ServerCurves int `json:"server_curves"`
	SharedCurves int `json:"shared_curves"`
	OwnCurves    int `json:"own_curves"`
}

// snapshot returns the class view's data.
func (c *class) snapshot() ClassSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := ClassSnapshot{Class: c.cfg.Name, Code: c.cfg.Code, Learners: []LearnerView{}, Median: []curvePoint{},
		Predictions: []PredictionView{}, SQL: map[string][]SQLView{}, Locks: c.lockList(), Push: c.push}
	byBytes := map[int64][]float64{}
	preds := map[string]*PredictionView{}
	var totals []time.Duration
	s.Stats.MinPerLearner = -1
	now := c.now()
	positions := c.queuePositions()
	var typical time.Duration
	if c.shared != nil {
		typical = c.shared.Typical()
	}
	if typical == 0 && len(c.measRuns) > 0 {
		runs := make([]float64, len(c.measRuns))
		for i, d := range c.measRuns {
			runs[i] = float64(d)
		}
		typical = time.Duration(median(runs))
	}
	for _, id := range c.order {
		l := c.learners[id]
		v := LearnerView{ID: l.ID, Name: l.Name, Connected: l.connections > 0, Running: l.running, RunningCell: l.runningCell,
			Queued: l.queued, Pending: len(l.pending), Cells: l.cells, MeasWaits: l.measWaits,
			LastWaitMs: float64(l.lastWait) / 1e6, Curve: l.curve}
		if l.queued && isMeasurement(l.queuedKind) {
			s.Stats.Waiting++
			waited := now.Sub(l.queuedAt)
			v.WaitedMs = float64(waited) / 1e6
			v.WaitingShared = l.sharedWait
			v.QueuePosition = positions[l.ID]
			est := l.expectedWait - waited
			if !l.sharedWait && typical > 0 && v.QueuePosition > 0 {
				est = time.Duration(v.QueuePosition) * typical
			}
			v.ExpectedWaitMs = float64(max(est, 0)) / 1e6
		}
		if len(l.curve) > 0 {
			if l.curveShared.IsZero() {
				s.Stats.ServerCurves++
			} else {
				s.Stats.SharedCurves++
				v.CurveSharedAt = l.curveShared.UTC().Format(time.RFC3339)
			}
		}
		for _, p := range l.curve {
			byBytes[p.Bytes] = append(byBytes[p.Bytes], p.Ns)
		}
		if o := l.ownCurve; o != nil {
			s.Stats.OwnCurves++
			v.Own = &OwnView{Curve: o.curve, Machine: o.machine, At: o.at.UTC().Format(time.RFC3339)}
			for _, p := range o.curve {
				byBytes[p.Bytes] = append(byBytes[p.Bytes], p.Ns)
			}
		}
		s.Learners = append(s.Learners, v)
		cells := make([]string, 0, len(l.predictions))
		for cell := range l.predictions {
			cells = append(cells, cell)
		}
		sort.Strings(cells)
		for _, cell := range cells {
			p := l.predictions[cell]
			pv := preds[cell]
			if pv == nil {
				pv = &PredictionView{Cell: cell, Question: p.Question, Unit: p.Unit, Choices: p.Choices}
				if p.Article != nil {
					pv.Article = *p.Article
				}
				preds[cell] = pv
			}
			if m := deref(p.MeasuredChoice); m != "" {
				pv.MeasuredChoice = m
			}
			pv.Guesses = append(pv.Guesses, Guess{Learner: l.Name, Guess: p.Guess, GuessChoice: deref(p.GuessChoice),
				Measured: p.Measured, MeasuredChoice: deref(p.MeasuredChoice), Source: sourceOf(l.predSource[cell])})
		}
		for cell, r := range l.sql {
			s.SQL[cell] = append(s.SQL[cell], SQLView{Learner: l.Name, sqlResult: *r})
		}
		totals = append(totals, l.totals...)
		s.Stats.Cells += l.cells
		s.Stats.MeasurementWaits += l.measWaits
		if s.Stats.MinPerLearner < 0 || l.cells < s.Stats.MinPerLearner {
			s.Stats.MinPerLearner = l.cells
		}
		s.Stats.MaxPerLearner = max(s.Stats.MaxPerLearner, l.cells)
	}
	s.Stats.MinPerLearner = max(0, s.Stats.MinPerLearner)
	s.Stats.DroppedFrames = int(c.dropped.Load())
	sizes := make([]int64, 0, len(byBytes))
	for b := range byBytes {
		sizes = append(sizes, b)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	for _, b := range sizes {
		s.Median = append(s.Median, curvePoint{Bytes: b, Ns: median(byBytes[b])})
	}
	cells := make([]string, 0, len(preds))
	for cell := range preds {
		cells = append(cells, cell)
	}
	sort.Strings(cells)
	for _, cell := range cells {
		s.Predictions = append(s.Predictions, *preds[cell])
	}
	sort.Slice(totals, func(i, j int) bool { return totals[i] < totals[j] })
	s.Stats.P50Ms = quantileMs(totals, 0.50)
	s.Stats.P99Ms = quantileMs(totals, 0.99)
	c.trimJoinLog(c.now())
	s.Joins = JoinStats{MaxLearners: c.cfg.MaxLearners, Full: len(c.learners) >= c.cfg.MaxLearners,
		LastMinute: len(c.joinLog), Refused: c.refused}
	if n := len(c.joinLog); n > 0 {
		s.Joins.Latest = c.joinLog[n-1].UTC().Format(time.RFC3339)
	}
	if c.warm != nil {
		s.Measuring, s.Prepared = c.warm.views()
		s.KeptFresh = c.warm.refresh
	}
	return s
}

func (c *class) snapshotJSON() []byte { return eventJSON("snapshot", c.snapshot()) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quantileMs is the q-quantile (nearest rank) of sorted durations, in ms.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i]) / 1e6
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sourceOf is where a guess's measured value came from.
func sourceOf(s string) string {
	if s == "" {
		return SourceServer
	}
	return s
}

// queuePositions numbers the learners whose measurement cell waits for
// the measurement core (not for a shared run), first queued first; c.mu
// held.
func (c *class) queuePositions() map[string]int {
	var q []*learner
	for _, l := range c.learners {
		if l.queued && !l.sharedWait && isMeasurement(l.queuedKind) {
			q = append(q, l)
		}
	}
	sort.Slice(q, func(i, j int) bool {
		if !q[i].queuedAt.Equal(q[j].queuedAt) {
			return q[i].queuedAt.Before(q[j].queuedAt)
		}
		return q[i].ID < q[j].ID
	})
	pos := make(map[string]int, len(q))
	for i, l := range q {
		pos[l.ID] = i + 1
	}
	return pos
}
