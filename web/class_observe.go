package web

// The class's view of the learners' kernels: the frames the tap kept,
// read into the roster, curves, predictions and SQL results.

import (
	"encoding/json"
	"strings"
	"time"

	"cachebook/engine"
	"cachebook/kernel"
	"cachebook/notebook/predict"
)

// wireFrame is the part of a broadcast frame the class reads.
type wireFrame struct {
	Header       kernel.Header   `json:"header"`
	ParentHeader kernel.Header   `json:"parent_header"`
	Content      json.RawMessage `json:"content"`
	Seq          uint64          `json:"seq"`
}

// observe updates the roster from one frame of a learner's kernel, or
// relays a frame of the demo session to every learner.
func (c *class) observe(f classFrame) {
	if f.session == DemoSession {
		c.sendLearners(nil, eventJSON("demo", json.RawMessage(f.data)))
		return
	}
	var m wireFrame
	if err := json.Unmarshal(f.data, &m); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.learners[learnerOfSession(f.session)]
	if l == nil {
		return
	}
	p, known := l.pending[m.ParentHeader.MsgID]
	switch m.Header.MsgType {
	case kernel.MsgExecuteInput:
		var in kernel.ExecuteInput
		if json.Unmarshal(m.Content, &in) == nil {
			l.running, l.runningCell, l.queued = in.Kind, in.CellID, false
			l.sharedWait, l.expectedWait = false, 0
		}
	case kernel.MsgStatus:
		var st kernel.Status
		if json.Unmarshal(m.Content, &st) == nil {
			switch st.ExecutionState {
			case kernel.StateQueued:
				if !l.queued {
					l.queuedAt = c.now()
				}
				l.queued, l.sharedWait, l.expectedWait = true, st.Shared, time.Duration(st.ExpectedWaitNs)
				if known {
					l.queuedKind = p.kind
				}
			case kernel.StateIdle:
				l.running, l.runningCell, l.queued = "", "", false
				l.sharedWait, l.expectedWait = false, 0
			}
		}
	case kernel.MsgExecuteReply:
		var r kernel.ExecuteReply
		if json.Unmarshal(m.Content, &r) != nil || !known {
			break
		}
		delete(l.pending, m.ParentHeader.MsgID)
		if r.Status == kernel.StatusAborted && r.Timings == nil {
			break
		}
		l.cells++
		total := time.Since(p.sent)
		if r.Timings != nil && r.Timings.TotalNs > 0 {
			total = time.Duration(r.Timings.TotalNs)
		}
		l.totals = append(l.totals, total)
		if len(l.totals) > 256 {
			l.totals = l.totals[1:]
		}
		if isMeasurement(p.kind) && r.Timings != nil {
			if r.Timings.RunNs > int64(5*time.Millisecond) {
				c.measRuns = append(c.measRuns, time.Duration(r.Timings.RunNs))
				if len(c.measRuns) > 16 {
					c.measRuns = c.measRuns[1:]
				}
			}
			l.lastWait = time.Duration(r.Timings.QueuedNs)
			if l.lastWait > 5*time.Millisecond {
				l.measWaits++
			}
		}
	case kernel.MsgExecuteResult, kernel.MsgDisplayData, kernel.MsgUpdateDisplayData:
		var dd struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if json.Unmarshal(m.Content, &dd) != nil {
			break
		}
		c.observeData(l, p, dd.Data)
	default:
		return
	}
	c.dirty = true
}

func isMeasurement(kind string) bool {
	return kind == kernel.KindLatency || kind == kernel.KindBandwidth || kind == kernel.KindSweep || kind == kernel.KindExperiment
}

// observeData keeps what the class view shows of an output: a finished
// latency curve, a prediction, an SQL cell's time, strategy and counters.
func (c *class) observeData(l *learner, p pendingCell, data map[string]json.RawMessage) {
	if raw, ok := data[kernel.MIMEMeasurement]; ok {
		var mm struct {
			Kind    string `json:"kind"`
			Live    bool   `json:"live"`
			Latency struct {
				Points []curvePoint `json:"points"`
			} `json:"latency"`
			Shared *kernel.SharedInfo `json:"shared"`
		}
		if json.Unmarshal(raw, &mm) == nil && mm.Kind == kernel.KindLatency && !mm.Live && len(mm.Latency.Points) > 0 {
			l.curve, l.curveAt, l.curveShared = mm.Latency.Points, c.now(), time.Time{}
			if mm.Shared != nil {
				if t, err := time.Parse(time.RFC3339, mm.Shared.At); err == nil {
					l.curveShared = t
				}
			}
		}
	}
	if raw, ok := data[MIMEPrediction]; ok {
		var pr predict.Outcome
		if json.Unmarshal(raw, &pr) == nil {
			if pr.Cell == "" {
				pr.Cell = p.cell
			}
			if pr.Cell != "" {
				l.predictions[pr.Cell] = &pr
				delete(l.predSource, pr.Cell)
			}
		}
	}
	if raw, ok := data[kernel.MIMEResult]; ok && p.cell != "" {
		var b kernel.ResultBundle
		if json.Unmarshal(raw, &b) == nil && len(b.Statements) > 0 {
			last := b.Statements[len(b.Statements)-1]
			r := &sqlResult{Rows: int64(last.RowCount), At: time.Now().UTC().Format(time.RFC3339), Counters: counterFigures(b.Counters)}
			if b.Timings != nil {
				r.TimeNs = b.Timings.RunNs
			}
			if r.TimeNs == 0 {
				for _, s := range b.Statements {
					r.TimeNs += s.ElapsedNs
				}
			}
			if last.Plan != nil {
				r.Strategy = strategies(last.Plan, nil)
			}
			if mraw, ok := data[kernel.MIMEModel]; ok {
				r.Modelled = modelFigures(mraw)
			}
			l.sql[p.cell] = r
		}
	}
}

// figure is one named number of a counters summary.
type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// counterPreference orders the measured counters the class view shows.
var counterPreference = []string{"ipc", "LLC-load-misses", "L1-dcache-load-misses", "fills-from-dram",
	"instructions", "cycles", "cpus-utilized", "task-clock", "page-faults"}

// counterFigures picks up to six counted figures of a perf report (its
// totals' available events and derived figures), in counterPreference
// order.
func counterFigures(v any) []figure {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var rep struct {
		Total struct {
			Events []struct {
				Name      string  `json:"name"`
				Available bool    `json:"available"`
				Value     float64 `json:"value"`
			} `json:"events"`
			Derived []figure `json:"derived"`
		} `json:"total"`
	}
	if json.Unmarshal(raw, &rep) != nil {
		return nil
	}
	have := map[string]float64{}
	for _, e := range rep.Total.Events {
		if e.Available {
			have[e.Name] = e.Value
		}
	}
	for _, d := range rep.Total.Derived {
		have[d.Name] = d.Value
	}
	var out []figure
	for _, name := range counterPreference {
		if v, ok := have[name]; ok && len(out) < 6 {
			out = append(out, figure{name, v})
		}
	}
	return out
}

// modelFigures summarises a modelled-counters report: the DRAM lines read
// and L2 and L3 misses of its last modelled GROUP BY, and per row.
func modelFigures(raw json.RawMessage) []figure {
	var rep kernel.ModelReport
	if json.Unmarshal(raw, &rep) != nil {
		return nil
	}
	for i := len(rep.Queries) - 1; i >= 0; i-- {
		q := rep.Queries[i]
		if !q.Modelled {
			continue
		}
		out := []figure{{"DRAM lines", float64(q.Total.DRAMReads)}, {"L2 misses", float64(q.Total.L2Misses)}, {"L3 misses", float64(q.Total.L3Misses)}}
		if q.Rows > 0 {
			out = append(out, figure{"DRAM lines/row", float64(q.Total.DRAMReads) / float64(q.Rows)})
		}
		return out
	}
	return nil
}

// strategies collects the "strategy: …" lines of a plan.
func strategies(n *engine.PlanNode, out []string) []string {
	for _, d := range n.Detail {
		if strings.HasPrefix(d, "strategy") {
			out = append(out, n.Name+" "+d)
		}
	}
	for _, ch := range n.Children {
		out = strategies(ch, out)
	}
	return out
}
