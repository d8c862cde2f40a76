package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"cachebook/engine"
	"cachebook/notebook/kind"
	"cachebook/notebook/predict"
)

// Cell kinds the kernel knows by name (the notebook format's, from
// notebook/kind). Only KindSQL is built in; the measurement kinds are
// served by runners registered in a Registry.
const (
	KindSQL        = kind.SQL
	KindLatency    = kind.Latency
	KindBandwidth  = kind.Bandwidth
	KindSweep      = kind.Sweep
	KindExperiment = kind.Experiment
	// KindCachesim runs a named access pattern through the cache model.
	KindCachesim = kind.Cachesim
)

// Cell is one unit of work: SQL statements or a measurement.
type Cell struct {
	// Kind selects the runner: sql, latency, bandwidth, sweep, experiment.
	// Empty means sql.
	Kind string
	// Source is the cell's text (SQL, or the measurement's parameters).
	Source string
	// Attrs are the cell's attributes from the notebook (e.g. timeout=10s).
	Attrs map[string]string
	// ID is the notebook's cell id, echoed in outputs (may be empty).
	ID string
	// Predict, when set, is the cell's prediction: after the run the
	// kernel shows the measured value beside Guess (which may be nil)
	// in a MIMEPrediction display (see predict.go).
	Predict *predict.Spec
	Guess   *predict.Guess
}

// Class says how a cell shares the machine with other cells.
type Class int

const (
	// Heavy cells run beside other heavy cells, up to the admission limit.
	Heavy Class = iota
	// Exclusive cells (measurements) run alone: nothing else runs beside
	// them, and they are pinned to the reserved core where there is one.
	Exclusive
)

func (c Class) String() string {
	if c == Exclusive {
		return "exclusive"
	}
	return "heavy"
}

// Outcome is what a runner produced: a MIME bundle for execute_result.
// Data should always hold text/plain. A nil Outcome or nil Data sends no
// execute_result.
type Outcome struct {
	Data map[string]any
}

// Runner executes cells of one kind. Run must honour ctx (return soon after
// it is cancelled), may report live output through env, and returns the
// result bundle. When it fails part-way it may return both a partial
// Outcome and an error; the Outcome is sent before the error.
type Runner interface {
	// Class reports how the cell shares the machine.
	Class(cell Cell) Class
	// Run executes the cell.
	Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error)
}

// CellError is an error a runner returns to choose the error name shown to
// the user (e.g. "MemoryLimit"), instead of the generic ExecutionError.
type CellError struct {
	Ename string
	Err   error
	// Position, if not nil, points into the cell's source.
	Position *Position
}

func (e *CellError) Error() string { return e.Err.Error() }
func (e *CellError) Unwrap() error { return e.Err }

// Registry maps cell kinds to runners. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	runners map[string]Runner
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{runners: map[string]Runner{}} }

// Register makes r the runner of kind, replacing any earlier one.
func (r *Registry) Register(kind string, run Runner) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runners[kind] = run
}

// Lookup returns the runner of kind.
func (r *Registry) Lookup(kind string) (Runner, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	run, ok := r.runners[kind]
	return run, ok
}

// Kinds returns the registered kinds, sorted with sql first.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	kinds := make([]string, 0, len(r.runners))
	for k := range r.runners {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if (kinds[i] == KindSQL) != (kinds[j] == KindSQL) {
			return kinds[i] == KindSQL
		}
		return kinds[i] < kinds[j]
	})
	return kinds
}

// Env is what a runner sees of the kernel while it runs a cell: its
// session's engine session, the limits, and live output. Its methods are
// safe for concurrent use (the engine reports progress from its workers).
// After the cell has ended (for example when an interrupted runner
// overran its grace period), output calls are ignored.
type Env struct {
	msgID     string // header id of the cell's execution, for display ids
	engine    *engine.Session
	engineErr error
	limits    Limits
	logger    *slog.Logger
	started   time.Time
	db        *engine.DB // the engine behind engine, for cells that query it on a session of their own
	dataDir   string     // the directory db reads, for checks through os.Root

	mu       sync.Mutex
	closed   bool
	emit     func(Message)
	session  string
	streamed int                  // stream bytes sent
	shown    map[string]bool      // display ids already sent as display_data
	last     map[string]time.Time // last send per display id
	pending  map[string]map[string]any
	order    []string  // display ids with pending updates, in first-seen order
	yielded  time.Time // last yield to the browser's event loop (js/wasm)
	// rows is the last (done, total) of Progress, rowsAt when it was
	// last shown, rowsPending whether a later one is held back.
	rows        [2]int64
	rowsAt      time.Time
	rowsPending bool
}

// Engine returns the kernel session's engine session (nil when the engine
// is unavailable). It is only used by one cell at a time.
func (e *Env) Engine() *engine.Session { return e.engine }

// EngineErr says why Engine is nil.
func (e *Env) EngineErr() error {
	if e.engineErr == nil && e.engine == nil {
		return errors.New("the SQL engine is unavailable")
	}
	return e.engineErr
}

// Limits returns the kernel's limits.
func (e *Env) Limits() Limits { return e.limits }

// Logger returns the kernel's logger.
func (e *Env) Logger() *slog.Logger { return e.logger }

// Started returns the time the cell started running.
func (e *Env) Started() time.Time { return e.started }

// DisplayID returns a display id unique to this execution: prefix-<msg id>.
func (e *Env) DisplayID(prefix string) string { return prefix + "-" + e.msgID }

// Stream sends text on the stdout or stderr stream. Output beyond
// Limits.MaxStreamBytes per cell is dropped with one truncation notice.
func (e *Env) Stream(name, text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || text == "" {
		return
	}
	max := e.limits.MaxStreamBytes
	if e.streamed >= max {
		return
	}
	if e.streamed+len(text) > max {
		text = text[:max-e.streamed] + fmt.Sprintf("\n[output truncated at %d bytes]\n", max)
		e.streamed = max
	} else {
		e.streamed += len(text)
	}
	e.send(MsgStream, Stream{Name: name, Text: text})
}

// Display shows data (a MIME bundle) under displayID: the first call sends
// display_data, later calls update_display_data, which replaces it. Updates
// are rate-limited to one per Limits.UpdateInterval per display; a
// suppressed update is kept and sent later (at the latest when the cell
// ends), so the last value always arrives.
func (e *Env) Display(displayID string, data map[string]any) {
	e.display(displayID, data)
	e.maybeYield()
}

func (e *Env) display(displayID string, data map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	now := time.Now()
	if !e.shown[displayID] {
		e.shown[displayID] = true
		e.last[displayID] = now
		e.send(MsgDisplayData, DisplayData{Data: data, Metadata: map[string]any{}, Transient: &Transient{DisplayID: displayID}})
		return
	}
	if now.Sub(e.last[displayID]) < e.limits.UpdateInterval {
		if _, ok := e.pending[displayID]; !ok {
			e.order = append(e.order, displayID)
		}
		e.pending[displayID] = data
		return
	}
	if _, ok := e.pending[displayID]; ok {
		delete(e.pending, displayID)
		e.dropOrder(displayID)
	}
	e.last[displayID] = now
	e.send(MsgUpdateDisplayData, DisplayData{Data: data, Metadata: map[string]any{}, Transient: &Transient{DisplayID: displayID}})
}

func (e *Env) dropOrder(id string) {
	for i, x := range e.order {
		if x == id {
			e.order = append(e.order[:i], e.order[i+1:]...)
			return
		}
	}
}

// Progress reports rows done of total as the cell's progress display.
func (e *Env) Progress(done, total int64) {
	// The engine calls this for every morsel, from every worker: keep
	// the calls between two updates cheap (no formatting, no allocation).
	now := time.Now()
	e.mu.Lock()
	e.rows = [2]int64{done, total}
	due := e.rowsAt.IsZero() || now.Sub(e.rowsAt) >= e.limits.UpdateInterval
	if due {
		e.rowsAt = now
	}
	e.rowsPending = !due
	e.mu.Unlock()
	if due {
		e.Display(e.DisplayID("progress"), e.rowsData(done, total, now))
		return
	}
	e.maybeYield()
}

// rowsData is the progress display of done of total rows.
func (e *Env) rowsData(done, total int64, now time.Time) map[string]any {
	text := fmt.Sprintf("%d rows", done)
	if total > 0 {
		text = fmt.Sprintf("%d%% (%d/%d rows)", done*100/total, done, total)
	}
	return map[string]any{
		MIMEProgress: Progress{Done: done, Total: total, Unit: "rows", ElapsedNs: now.Sub(e.started).Nanoseconds()},
		MIMEText:     text,
	}
}

// flush sends pending updates.
func (e *Env) flush() {
	e.mu.Lock()
	pending, rows := e.rowsPending, e.rows
	e.rowsPending = false
	e.mu.Unlock()
	if pending { // the last row count Progress held back
		e.display(e.DisplayID("progress"), e.rowsData(rows[0], rows[1], time.Now()))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	for _, id := range e.order {
		e.send(MsgUpdateDisplayData, DisplayData{Data: e.pending[id], Metadata: map[string]any{}, Transient: &Transient{DisplayID: id}})
		delete(e.pending, id)
		e.last[id] = time.Now()
	}
	e.order = e.order[:0]
}

// close makes later output calls no-ops.
func (e *Env) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
}

// send emits one iopub message; e.mu must be held.
func (e *Env) send(msgType string, content any) {
	if e.emit == nil {
		return
	}
	e.emit(NewMessage(ChannelIOPub, msgType, e.session, Header{}, content))
}
