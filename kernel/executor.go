package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"cachebook/engine"
	"cachebook/engine/sql"
)

// Limits bound what one cell may use and send. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxRows is the number of result rows sent to the client per
	// statement; the total row count is always reported.
	MaxRows int
	// MaxResultBytes bounds the formatted result values sent per cell.
	MaxResultBytes int
	// MaxStreamBytes bounds the stream text sent per cell.
	MaxStreamBytes int
	// CellTimeout is the longest a cell may run. A cell's timeout
	// attribute may only shorten it.
	CellTimeout time.Duration
	// UpdateInterval is the shortest time between two updates of one
	// display (0.1 s: at most 10 updates per second).
	UpdateInterval time.Duration
	// InterruptGrace is the grace period, the one timer of the interrupt
	// path (100 ms). An interrupt cancels the running cell's context (the
	// only way a cell is stopped: Kernel.interrupt cancels it, a time
	// limit expires it); the runner then has InterruptGrace to return.
	// After that the kernel replies Interrupted (or Timeout) at once and
	// the runner finishes in the background: the next cell of the same
	// executor starts only when it has, and the server holds its
	// admission slot until then (at most a minute, logged), so an
	// overrunning runner never oversubscribes the machine.
	InterruptGrace time.Duration
	// QueryMemory is the per-query memory limit the engine was opened
	// with (reported to clients; 0: engine default).
	QueryMemory int64
	// MaxMessageBytes is the largest client frame the transport accepts
	// (reported to clients).
	MaxMessageBytes int
	// CellMemory is the memory one cell may use (0: no limit). Queries
	// get it as their engine memory limit when QueryMemory is 0;
	// measurement cells and experiments size their buffers against it and
	// refuse larger parameters, with a MemoryLimit error, before
	// allocating.
	CellMemory int64
	// Threads is the most threads a cell may use (0: no limit; 1 in the
	// browser, where Go's WebAssembly runs on one thread).
	Threads int
	// Browser says the kernel runs in a browser page (web/wasm sets it):
	// cells that need what a page lacks (files, more memory than its cap,
	// more than one thread) run as labelled browser variants, and errors
	// name the browser's limits rather than a server flag. A server
	// limited to one thread is not a browser: it sets Threads, not this.
	Browser bool
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxRows:         1000,
		MaxResultBytes:  1 << 20,
		MaxStreamBytes:  64 << 10,
		CellTimeout:     5 * time.Minute,
		UpdateInterval:  100 * time.Millisecond,
		InterruptGrace:  100 * time.Millisecond,
		MaxMessageBytes: 4 << 20,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxRows <= 0 {
		l.MaxRows = d.MaxRows
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = d.MaxResultBytes
	}
	if l.MaxStreamBytes <= 0 {
		l.MaxStreamBytes = d.MaxStreamBytes
	}
	if l.CellTimeout <= 0 {
		l.CellTimeout = d.CellTimeout
	}
	if l.UpdateInterval <= 0 {
		l.UpdateInterval = d.UpdateInterval
	}
	if l.InterruptGrace <= 0 {
		l.InterruptGrace = d.InterruptGrace
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = d.MaxMessageBytes
	}
	return l
}

// Info returns the limits as clients see them.
func (l Limits) Info() LimitsInfo {
	l = l.withDefaults()
	hz := int(time.Second / l.UpdateInterval)
	return LimitsInfo{
		MaxRows:         l.MaxRows,
		MaxResultBytes:  l.MaxResultBytes,
		CellTimeoutMs:   l.CellTimeout.Milliseconds(),
		QueryMemory:     l.QueryMemory,
		MaxMessageBytes: l.MaxMessageBytes,
		UpdateRateHz:    hz,
		CellMemory:      l.CellMemory,
		Threads:         l.Threads,
	}
}

// Config configures an Executor.
type Config struct {
	// DB is the engine the sql cells run on, opened by the caller
	// (cmd/cachebook opens one for all its kernels); nil: sql cells fail
	// with EngineUnavailable.
	DB *engine.DB
	// DataPath is the data directory DB reads, for cells that open it
	// themselves (the sum-rewrite experiment); empty: none.
	DataPath string
	// QueryMemory is the per-query memory limit DB was opened with,
	// reported to clients when Limits.QueryMemory is 0.
	QueryMemory int64
	// EngineUnavailable, when DB is nil, is the reason sql cells fail
	// (e.g. the error from engine.Open). Nil means "no data directory".
	EngineUnavailable error
	// Registry maps cell kinds to runners. Nil: DefaultRegistry().
	Registry *Registry
	// Limits bound each cell; zero fields take defaults.
	Limits Limits
	// PinCPU, when Pin is set, is the CPU exclusive cells run pinned to.
	Pin    bool
	PinCPU int
	// Logger receives the executor's logs (nil: slog.Default()).
	Logger *slog.Logger
	// Session is the kernel session id put in message headers (empty: a
	// fresh UUID).
	Session string
}

// Executor runs cells of one kernel session, one at a time, on its own
// engine session (so SET statements persist from cell to cell). It is the
// transport-independent core of the kernel: `cachebook run` uses it
// directly, the server (and the browser) wrap it in a Kernel.
type Executor struct {
	cfg    Config
	reg    *Registry
	limits Limits
	log    *slog.Logger
	db     *engine.DB

	busy chan struct{} // holds a token while a runner goroutine runs

	mu      sync.Mutex
	session string
	eng     *engine.Session
	count   int
}

// NewExecutor returns an executor on cfg.DB.
func NewExecutor(cfg Config) (*Executor, error) {
	x := &Executor{cfg: cfg, reg: cfg.Registry, limits: cfg.Limits.withDefaults(), log: cfg.Logger, db: cfg.DB}
	if x.reg == nil {
		x.reg = DefaultRegistry()
	}
	if x.log == nil {
		x.log = slog.Default()
	}
	if cfg.QueryMemory > 0 && x.limits.QueryMemory == 0 {
		x.limits.QueryMemory = cfg.QueryMemory
	}
	if x.db != nil {
		RegisterKeys(x.db, x.limits.CellMemory) // unless the DB has it already
	}
	x.session = cfg.Session
	if x.session == "" {
		x.session = NewID()
	}
	if x.db != nil {
		x.eng = x.db.NewSession()
	}
	x.busy = make(chan struct{}, 1)
	return x, nil
}

// Registry returns the executor's runner registry.
func (x *Executor) Registry() *Registry { return x.reg }

// Limits returns the executor's limits (defaults filled in).
func (x *Executor) Limits() Limits { return x.limits }

// KernelInfo returns the content of a kernel_info_reply: the protocol,
// the cell kinds this kernel runs (and where else they run), its limits,
// and state, the execution state the caller knows.
func (x *Executor) KernelInfo(state string) KernelInfoReply {
	rt := RuntimeServer
	if x.limits.Browser {
		rt = RuntimeBrowser
	}
	return KernelInfoReply{
		Status:                StatusOK,
		ProtocolVersion:       Protocol,
		Implementation:        "cachebook",
		ImplementationVersion: "0.1",
		LanguageInfo:          LanguageInfo{Name: "sql", Mimetype: "application/sql", FileExtension: ".sql", CodemirrorMode: "sql"},
		Banner:                "cachebook kernel: GROUP BY over Parquet on a pure-Go columnar engine",
		CellKinds:             x.reg.Kinds(),
		Kinds:                 x.reg.Info(),
		Runtime:               rt,
		Limits:                x.limits.Info(),
		ExecutionState:        state,
		ExecutionCount:        x.ExecutionCount(),
	}
}

// KernelSession returns the current kernel session id.
func (x *Executor) KernelSession() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.session
}

// ExecutionCount returns the number of counted cells (neither silent nor
// with store_history false) executed since
// the last reset.
func (x *Executor) ExecutionCount() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.count
}

// Class returns the admission class of cell (Heavy for unknown kinds).
func (x *Executor) Class(cell Cell) Class {
	if r, ok := x.reg.Lookup(kindOf(cell)); ok {
		return r.Class(cell)
	}
	return Heavy
}

// Reset waits for any running cell to finish, then starts a fresh engine
// session (settings back to defaults), sets the execution count to 0 and
// takes a new kernel session id, which it returns.
func (x *Executor) Reset(ctx context.Context) (string, error) {
	select {
	case x.busy <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("kernel: reset: %w", ctx.Err())
	}
	defer func() { <-x.busy }()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.db != nil {
		x.eng = x.db.NewSession()
	}
	x.count = 0
	x.session = NewID()
	return x.session, nil
}

// WaitIdle blocks until no runner goroutine of this executor is running
// (one may outlive an interrupted cell by up to the engine's reaction
// time), or ctx is done.
func (x *Executor) WaitIdle(ctx context.Context) error {
	select {
	case x.busy <- struct{}{}:
		<-x.busy
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reply is the outcome of Execute: the execute_reply content, the result
// bundle (if any) and the error content (if the cell failed).
type Reply struct {
	ExecuteReply
	Outcome *Outcome
	Error   *ErrorContent
}

// Failure is the error Execute returns for a cell that failed; it carries
// the error content that was emitted.
type Failure struct {
	ErrorContent
}

func (f *Failure) Error() string { return f.Ename + ": " + f.Evalue }

// Execute runs cell and returns when it has finished, failed, or been
// stopped (ctx cancelled: "Interrupted"; time limit: "Timeout"). It emits
// the cell's iopub messages through emit, in order: execute_input, stream
// and display messages, then execute_result and/or error. It does not emit
// status or execute_reply; the returned Reply holds the reply content.
// The returned error is a *Failure when the cell failed, nil otherwise.
// Execute must not be called concurrently on one Executor.
func (x *Executor) Execute(ctx context.Context, cell Cell, emit func(Message)) (*Reply, error) {
	return x.execute(ctx, cell, execOpts{}, emit)
}

// execOpts are the per-request options of an execution.
type execOpts struct {
	silent    bool
	noHistory bool // store_history false: not counted (as silent)
	queued    time.Duration
}

func kindOf(c Cell) string {
	if c.Kind == "" {
		return KindSQL
	}
	return c.Kind
}

func (x *Executor) execute(ctx context.Context, cell Cell, o execOpts, emit func(Message)) (*Reply, error) {
	start := time.Now()
	// Wait for a runner that overran an earlier interrupt.
	select {
	case x.busy <- struct{}{}:
	case <-ctx.Done():
		return x.fail(cell, 0, o, start, emit, &ErrorContent{Ename: ErrInterrupted, Evalue: "interrupted before the cell started"})
	}
	x.mu.Lock()
	if !o.silent && !o.noHistory {
		x.count++
	}
	count, eng, session := x.count, x.eng, x.session
	x.mu.Unlock()

	if emit == nil {
		emit = func(Message) {}
	}
	kind := kindOf(cell)
	if !o.silent {
		emit(NewMessage(ChannelIOPub, MsgExecuteInput, session, Header{}, ExecuteInput{Code: cell.Source, Kind: kind, CellID: cell.ID, ExecutionCount: count}))
	}
	runner, ok := x.reg.Lookup(kind)
	if !ok {
		<-x.busy
		return x.fail(cell, count, o, start, emit, &ErrorContent{Ename: ErrUnknownKind,
			Evalue: fmt.Sprintf("this kernel cannot run %q cells (it runs: %s)", kind, strings.Join(x.reg.Kinds(), ", "))})
	}
	timeout := x.limits.CellTimeout
	if t, ok := cell.Attrs["timeout"]; ok {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			<-x.busy
			return x.fail(cell, count, o, start, emit, &ErrorContent{Ename: ErrExecution,
				Evalue: fmt.Sprintf("invalid timeout attribute %q: want a positive Go duration such as 10s", t)})
		}
		timeout = min(timeout, d)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	env := &Env{
		msgID: NewID(), engine: eng, limits: x.limits, logger: x.log, started: time.Now(),
		emit: emit, session: session, db: x.db, dataDir: x.cfg.DataPath,
		shown: map[string]bool{}, last: map[string]time.Time{}, pending: map[string]map[string]any{},
	}
	if eng == nil {
		env.engineErr = x.engineUnavailable()
	}
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	class := runner.Class(cell)
	go func() {
		defer func() { <-x.busy }()
		if class == Exclusive && x.cfg.Pin {
			// Pin this thread and never unlock it: the runtime then ends
			// the thread with the goroutine, so the affinity dies with it.
			runtime.LockOSThread()
			if err := pinThread(x.cfg.PinCPU); err != nil {
				x.log.Warn("kernel: cannot pin measurement cell", "cpu", x.cfg.PinCPU, "err", err)
			}
		}
		var r result
		func() {
			defer func() {
				if p := recover(); p != nil {
					x.log.Error("kernel: runner panicked", "kind", kind, "panic", p, "stack", string(debug.Stack()))
					r.err = &CellError{Ename: ErrKernel, Err: fmt.Errorf("internal error in the %s runner: %v", kind, p)}
				}
			}()
			r.out, r.err = runner.Run(cctx, cell, env)
		}()
		done <- r
	}()

	var r result
	select {
	case r = <-done:
	case <-cctx.Done():
		grace := time.NewTimer(x.limits.InterruptGrace)
		select {
		case r = <-done:
		case <-grace.C:
			x.log.Warn("kernel: runner did not stop within the grace period; it finishes in the background",
				"kind", kind, "grace", x.limits.InterruptGrace)
			r.err = cctx.Err()
		}
		grace.Stop()
	}
	env.flush()
	env.close()
	run := time.Since(start)

	var ec *ErrorContent
	if r.err != nil {
		ec = x.classify(ctx, cctx, cell, r.err, timeout)
	}
	if r.out != nil && r.out.Data != nil {
		if b, ok := r.out.Data[MIMEResult].(*ResultBundle); ok && b.Timings == nil {
			b.Timings = &Timings{QueuedNs: o.queued.Nanoseconds(), RunNs: run.Nanoseconds(), TotalNs: (o.queued + run).Nanoseconds()}
		}
		if !o.silent {
			emit(NewMessage(ChannelIOPub, MsgExecuteResult, session, Header{}, ExecuteResult{
				ExecutionCount: count, CellID: cell.ID, Data: r.out.Data, Metadata: map[string]any{}}))
		}
	}
	if !o.silent {
		x.emitPrediction(cell, r.out, ec, session, emit)
	}
	timings := &Timings{QueuedNs: o.queued.Nanoseconds(), RunNs: run.Nanoseconds(), TotalNs: (o.queued + run).Nanoseconds()}
	if ec != nil {
		ec.CellID, ec.ExecutionCount = cell.ID, count
		emit(NewMessage(ChannelIOPub, MsgError, session, Header{}, *ec))
		return &Reply{ExecuteReply: ExecuteReply{Status: StatusError, ExecutionCount: count, CellID: cell.ID,
			Timings: timings, Ename: ec.Ename, Evalue: ec.Evalue}, Outcome: r.out, Error: ec}, &Failure{*ec}
	}
	return &Reply{ExecuteReply: ExecuteReply{Status: StatusOK, ExecutionCount: count, CellID: cell.ID, Timings: timings}, Outcome: r.out}, nil
}

// fail reports an error for a cell that did not run.
func (x *Executor) fail(cell Cell, count int, o execOpts, start time.Time, emit func(Message), ec *ErrorContent) (*Reply, error) {
	if emit == nil {
		emit = func(Message) {}
	}
	ec.Traceback = []string{ec.Ename + ": " + ec.Evalue}
	ec.CellID, ec.ExecutionCount = cell.ID, count
	if !o.silent {
		x.emitPrediction(cell, nil, ec, x.KernelSession(), emit)
	}
	emit(NewMessage(ChannelIOPub, MsgError, x.KernelSession(), Header{}, *ec))
	run := time.Since(start)
	return &Reply{ExecuteReply: ExecuteReply{Status: StatusError, ExecutionCount: count, CellID: cell.ID,
		Timings: &Timings{QueuedNs: o.queued.Nanoseconds(), RunNs: run.Nanoseconds(), TotalNs: (o.queued + run).Nanoseconds()},
		Ename:   ec.Ename, Evalue: ec.Evalue}, Error: ec}, &Failure{*ec}
}

func (x *Executor) engineUnavailable() error {
	if x.cfg.EngineUnavailable != nil {
		return &CellError{Ename: ErrExecution, Err: fmt.Errorf("the SQL engine is unavailable: %w", x.cfg.EngineUnavailable)}
	}
	return &CellError{Ename: ErrExecution, Err: errors.New("the SQL engine is unavailable: no data directory was given")}
}

// classify turns a runner error into error content. parent is the
// execution's context (cancelled by an interrupt), cctx the cell's
// (which also has the time limit).
func (x *Executor) classify(parent, cctx context.Context, cell Cell, err error, timeout time.Duration) *ErrorContent {
	var ec ErrorContent
	var se *sql.Error
	var ce *CellError
	switch {
	case parent.Err() != nil:
		ec = ErrorContent{Ename: ErrInterrupted, Evalue: "the cell was interrupted"}
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		ec = ErrorContent{Ename: ErrTimeout, Evalue: fmt.Sprintf("the cell ran past its time limit of %s and was stopped", timeout)}
	case errors.As(err, &se):
		ec = ErrorContent{Ename: ErrSQL, Evalue: se.Error(),
			Position: &Position{Line: se.Pos.Line, Col: se.Pos.Col, Offset: se.Pos.Offset}}
		if c := se.Caret(cell.Source); c != "" {
			ec.Traceback = append(strings.Split(c, "\n"), se.Error())
		}
	case errors.As(err, &ce):
		ec = ErrorContent{Ename: ce.Ename, Evalue: ce.Error(), Position: ce.Position}
	case isMemoryLimit(err):
		var set int64 // the session's memory_limit, which a cell may have lowered
		if x.eng != nil {
			set = x.eng.Settings().MemoryLimit
		}
		ec = ErrorContent{Ename: ErrMemoryLimit, Evalue: err.Error() + memoryHint(x.limits, set)}
	default:
		ec = ErrorContent{Ename: ErrExecution, Evalue: err.Error()}
	}
	if ec.Ename == ErrSQL {
		var ce *CellError
		if errors.As(err, &ce) && ce.Position != nil {
			ec.Position = ce.Position
		}
	}
	if ec.Traceback == nil {
		ec.Traceback = []string{ec.Ename + ": " + ec.Evalue}
	}
	var si *stmtIndexError
	if ec.Position == nil && errors.As(err, &si) {
		i := si.index
		ec.StatementIndex = &i
	}
	return &ec
}

// isMemoryLimit reports whether err says a query went over its memory
// limit (the engine wraps engine.ErrMemoryLimit).
func isMemoryLimit(err error) bool {
	return errors.Is(err, engine.ErrMemoryLimit)
}

// stmtIndexError records which statement of a cell failed.
type stmtIndexError struct {
	index int
	err   error
}

func (e *stmtIndexError) Error() string { return e.err.Error() }
func (e *stmtIndexError) Unwrap() error { return e.err }
