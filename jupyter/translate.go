package jupyter

import (
	"encoding/json"
	"time"

	"cachebook/kernel"
)

// updateGap is the shortest time between two batches of live display
// updates of one execution: each display is updated at most ten times a
// second, the last update always arriving before the reply. (A held
// update may follow later output: a display is replaced by its id, so
// its place among the outputs does not change.)
const updateGap = 100 * time.Millisecond

// request is an execute_request handed to the shared kernel, from then
// until its reply. Only the translating goroutine touches its fields.
type request struct {
	m      *Message // the Jupyter request
	code   string   // its code, as execute_input echoes it
	silent bool
	store  bool // store_history: its input goes into the history
	busy   bool // its busy status was published
	count  int  // its execution count (from execute_input)
	err    *kernel.ErrorContent
	live   map[string]string // display id → what it shows live
	// pending holds the newest held-back update of each display, in
	// the order they were first held; lastUpdate is when the last
	// update was published.
	pending    map[string]map[string]any
	order      []string
	lastUpdate time.Time
}

// execute hands an execute_request to the shared kernel's queue.
func (k *Kernel) execute(m *Message) {
	var req struct {
		Code         string `json:"code"`
		Silent       bool   `json:"silent"`
		StoreHistory *bool  `json:"store_history"`
		StopOnError  *bool  `json:"stop_on_error"`
	}
	if err := json.Unmarshal(m.Content, &req); err != nil {
		k.status("busy", m)
		k.reply(k.shell, m, "execute_reply", map[string]any{"status": "error", "ename": kernel.ErrBadMessage,
			"evalue": "execute_request content: " + err.Error(), "traceback": []string{}})
		k.status("idle", m)
		return
	}
	// As ipykernel: store_history defaults to not silent, and a silent
	// execution is never stored; stop_on_error defaults to true.
	store := !req.Silent && (req.StoreHistory == nil || *req.StoreHistory)
	stop := req.StopOnError == nil || *req.StopOnError
	cell := CellFromCode(req.Code)
	cell.Predict, cell.Guess = requestPrediction(m.Metadata)
	id := kernel.NewID()
	r := &request{m: m, code: req.Code, silent: req.Silent, store: store, live: map[string]string{}, pending: map[string]map[string]any{}}
	k.mu.Lock()
	k.reqs[id] = r
	k.mu.Unlock()
	// The client's date goes with the request: the shared kernel aborts
	// what a client sent before an error or interrupt it had not seen.
	km := &kernel.Message{Channel: kernel.ChannelShell,
		Header: kernel.Header{MsgID: id, MsgType: kernel.MsgExecuteRequest, Date: m.Header.Date},
		Content: kernel.ExecuteRequest{Code: cell.Source, Kind: cell.Kind, Attrs: cell.Attrs, Silent: req.Silent,
			StoreHistory: &store, StopOnError: &stop, Predict: cell.Predict, Guess: cell.Guess}}
	if err := k.sk.Handle(nil, km); err != nil {
		k.mu.Lock()
		delete(k.reqs, id)
		k.mu.Unlock()
		k.status("busy", m)
		k.reply(k.shell, m, "execute_reply", map[string]any{"status": "error", "ename": kernel.ErrKernel,
			"evalue": err.Error(), "traceback": []string{err.Error()}})
		k.status("idle", m)
	}
}

// translate reads the shared kernel's frames and sends them on as Jupyter
// messages until the subscription ends. A subscription dropped for
// falling behind is renewed from the kernel's replay buffer.
func (k *Kernel) translate(sub *kernel.Subscription) {
	var last uint64
	handle := func(data []byte) {
		m, err := kernel.Decode(data, 0)
		if err != nil {
			k.log.Error("jupyter: a kernel frame does not decode", "err", err)
			return
		}
		if m.Seq != 0 {
			if m.Seq <= last {
				return // replayed twice
			}
			last = m.Seq
		}
		k.frame(m)
	}
	tick := time.NewTicker(updateGap)
	defer tick.Stop()
	for {
		for _, d := range sub.Replay {
			handle(d)
		}
	read:
		for {
			select {
			case d, ok := <-sub.C:
				if !ok {
					break read
				}
				handle(d)
			case <-tick.C:
				k.flushDue()
			}
		}
		if sub.Reason() != kernel.CloseSlow {
			return
		}
		k.log.Warn("jupyter: fell behind the kernel's output; catching up from its replay buffer")
		ns, err := k.mgr.Attach(k.sk.ID(), last)
		if err != nil {
			k.log.Error("jupyter: resubscribe", "err", err)
			return
		}
		sub = ns
	}
}

// lookup returns the request the kernel's request id names, or nil.
func (k *Kernel) lookup(id string) *request {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reqs[id]
}

// flushDue publishes the held-back updates that are due.
func (k *Kernel) flushDue() {
	k.mu.Lock()
	var due []*request
	for _, r := range k.reqs {
		if len(r.order) > 0 {
			due = append(due, r)
		}
	}
	k.mu.Unlock()
	now := time.Now()
	for _, r := range due {
		if now.Sub(r.lastUpdate) >= updateGap {
			k.flush(r)
		}
	}
}

// flush publishes r's held-back updates.
func (k *Kernel) flush(r *request) {
	for _, id := range r.order {
		k.publish("update_display_data", r.m, map[string]any{"data": r.pending[id], "metadata": map[string]any{},
			"transient": map[string]any{"display_id": id}})
		delete(r.pending, id)
	}
	r.order = r.order[:0]
	r.lastUpdate = time.Now()
}

// setBusy publishes r's busy status once.
func (k *Kernel) setBusy(r *request) {
	if !r.busy {
		r.busy = true
		k.status("busy", r.m)
	}
}

// frame sends one frame of the shared kernel on as Jupyter messages
// answering the request it answers. A silent execution publishes nothing
// but its status (Jupyter's "silent": no broadcast; the reply still says
// how it went).
func (k *Kernel) frame(km *kernel.Message) {
	r := k.lookup(km.ParentHeader.MsgID)
	if r == nil {
		return // the interrupt's reply (sent at once), idle statuses
	}
	switch km.Header.MsgType {
	case kernel.MsgStatus:
		var c kernel.Status
		if km.DecodeContent(&c) == nil && c.ExecutionState == kernel.StateBusy {
			k.setBusy(r)
		}
		// Queued and idle are not Jupyter's: finish publishes each
		// request's idle after its reply.
		return
	case kernel.MsgExecuteReply:
		var c kernel.ExecuteReply
		if err := km.DecodeContent(&c); err != nil {
			c = kernel.ExecuteReply{Status: kernel.StatusError, Ename: kernel.ErrKernel, Evalue: err.Error()}
		}
		k.finish(km.ParentHeader.MsgID, r, c)
		return
	}
	k.setBusy(r)
	switch km.Header.MsgType {
	case kernel.MsgExecuteInput:
		var c kernel.ExecuteInput
		if km.DecodeContent(&c) != nil {
			return
		}
		r.count = c.ExecutionCount
		if r.store {
			k.mu.Lock()
			k.history.add(c.ExecutionCount, r.code)
			k.mu.Unlock()
		}
		if !r.silent {
			k.publish("execute_input", r.m, map[string]any{"code": r.code, "execution_count": c.ExecutionCount})
		}
	case kernel.MsgDisplayData, kernel.MsgUpdateDisplayData:
		var c kernel.DisplayData
		if km.DecodeContent(&c) != nil || r.silent {
			return
		}
		k.display(r, km.Header.MsgType, c)
	case kernel.MsgStream:
		var c kernel.Stream
		if km.DecodeContent(&c) == nil && !r.silent {
			k.publish("stream", r.m, map[string]any{"name": c.Name, "text": c.Text})
		}
	case kernel.MsgExecuteResult:
		var c kernel.ExecuteResult
		if km.DecodeContent(&c) != nil {
			return
		}
		data := Bundle(c.Data)
		if r.store {
			if t, ok := data[MIMEText].(string); ok {
				k.mu.Lock()
				k.history.output(c.ExecutionCount, t)
				k.mu.Unlock()
			}
		}
		if !r.silent {
			k.publish("execute_result", r.m, map[string]any{"execution_count": c.ExecutionCount, "data": data, "metadata": map[string]any{}})
		}
	case kernel.MsgError:
		var c kernel.ErrorContent
		if km.DecodeContent(&c) != nil {
			return
		}
		r.err = &c
		if !r.silent {
			k.publish("error", r.m, map[string]any{"ename": c.Ename, "evalue": c.Evalue, "traceback": traceback(&c)})
		}
	}
}

// display publishes a display or holds back an update of one (at most one
// update per updateGap). A live display (measurements, counters) is
// remembered, to be replaced by a note when the cell ends, and sent
// without its PNG: the front ends that draw a PNG rather than the SVG or
// Vega-Lite chart see the final chart in the result.
func (k *Kernel) display(r *request, typ string, c kernel.DisplayData) {
	data := Bundle(c.Data)
	var id string
	if c.Transient != nil {
		id = c.Transient.DisplayID
	}
	if id == "" {
		if typ == kernel.MsgUpdateDisplayData {
			return // an update must name its display
		}
		k.publish(typ, r.m, map[string]any{"data": data, "metadata": map[string]any{}, "transient": map[string]any{}})
		return
	}
	if what := liveKind(c.Data); what != "" {
		r.live[id] = what
		delete(data, MIMEPNG)
	}
	if typ == kernel.MsgDisplayData {
		k.publish(typ, r.m, map[string]any{"data": data, "metadata": map[string]any{}, "transient": map[string]any{"display_id": id}})
		return
	}
	if _, held := r.pending[id]; !held {
		r.order = append(r.order, id)
	}
	r.pending[id] = data
	if time.Since(r.lastUpdate) >= updateGap {
		k.flush(r)
	}
}

// finish answers r with the shared kernel's reply (id is the kernel's
// request id), then publishes its idle status, as ipykernel does.
func (k *Kernel) finish(id string, r *request, c kernel.ExecuteReply) {
	k.mu.Lock()
	delete(k.reqs, id)
	k.mu.Unlock()
	k.setBusy(r)
	if !r.silent {
		k.flush(r)
	}
	switch c.Status {
	case kernel.StatusOK:
		// The final chart or counters are in the result; shrink the live
		// displays to a note so a saved notebook does not show them twice.
		// (A cell that failed or was interrupted keeps its partial live
		// display.)
		if !r.silent {
			for id, what := range r.live {
				note := "the final " + what + " are in the cell's result"
				k.publish("update_display_data", r.m, map[string]any{
					"data": map[string]any{MIMEText: note, MIMEHTML: "<small>" + note + "</small>",
						kernel.MIMEProgress: kernel.Progress{Done: 1, Total: 1}},
					"metadata": map[string]any{}, "transient": map[string]any{"display_id": id}})
			}
		}
		k.reply(k.shell, r.m, "execute_reply", map[string]any{
			"status": "ok", "execution_count": c.ExecutionCount, "user_expressions": map[string]any{}, "payload": []any{},
		})
	case kernel.StatusAborted:
		// As ipykernel: a request that did not run has no execution count.
		k.reply(k.shell, r.m, "execute_reply", map[string]any{"status": "aborted"})
	default:
		tb := []string{c.Ename + ": " + c.Evalue}
		if r.err != nil && r.err.Ename == c.Ename {
			tb = traceback(r.err)
		}
		k.reply(k.shell, r.m, "execute_reply", map[string]any{
			"status": "error", "execution_count": c.ExecutionCount, "ename": c.Ename, "evalue": c.Evalue, "traceback": tb,
		})
	}
	k.status("idle", r.m)
}

// liveKind says what a live display shows: "measurements" or "counters"
// ("" if it is neither).
func liveKind(data map[string]any) string {
	if _, ok := data[kernel.MIMEMeasurement]; ok {
		return "measurements"
	}
	if _, ok := data[kernel.MIMECounters]; ok {
		return "counters"
	}
	return ""
}
