package jupyter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"cachebook/engine"
	"cachebook/kernel"
	"cachebook/notebook"
	"cachebook/notebook/predict"
)

// Config configures a Kernel.
type Config struct {
	// Conn says where to listen and holds the signing key.
	Conn *ConnectionInfo
	// Executor configures the cells' executor, on the engine the caller
	// opened (Executor.DB); without one the kernel still starts and SQL
	// cells fail with Executor.EngineUnavailable.
	Executor kernel.Config
	// Version is reported as implementation_version.
	Version string
	// Logger receives the kernel's logs (nil: slog.Default()).
	Logger *slog.Logger
	// MaxMessageBytes bounds one incoming message, enforced as its frames
	// are read (0: DefaultMaxMessageBytes).
	MaxMessageBytes int64
}

// Kernel is one running Jupyter kernel: its sockets and the executor its
// cells run on. Shell requests are handled one at a time in order;
// control requests (interrupt, shutdown) are handled at once, also while a
// cell runs.
type Kernel struct {
	cfg     Config
	log     *slog.Logger
	sign    signer
	x       *kernel.Executor
	db      *engine.DB // for completion and inspection (nil: no engine)
	session string     // this kernel process's session id

	shell, control, stdin, iopub, hb zmq4.Socket
	sendMu                           sync.Mutex // serialises sends (all sockets)

	mu       sync.Mutex
	cancel   context.CancelFunc // interrupts the running cell
	shutdown chan bool          // receives restart when a shutdown_request came
	dropped  int                // messages refused for a bad signature
	// The last interrupt: when it arrived, and the date its client gave
	// it (zero after SIGINT). See interrupted.
	interruptAt, interruptDate time.Time

	shellQ chan *Message
	held   []*Message // queued requests taken out by holdQueued (shell goroutine only)
}

// New returns a kernel that is not yet listening.
func New(cfg Config) (*Kernel, error) {
	if cfg.Conn == nil {
		return nil, errors.New("jupyter: no connection info")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	xc := cfg.Executor
	if xc.Logger == nil {
		xc.Logger = log
	}
	x, err := kernel.NewExecutor(xc)
	if err != nil {
		return nil, fmt.Errorf("jupyter: %w", err)
	}
	return &Kernel{
		cfg: cfg, log: log, sign: signer{key: []byte(cfg.Conn.Key)}, x: x, db: xc.DB,
		session: kernel.NewID(), shutdown: make(chan bool, 1), shellQ: make(chan *Message, 64),
	}, nil
}

// Dropped returns the number of incoming messages refused because their
// signature was wrong.
func (k *Kernel) Dropped() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dropped
}

// Run listens on the connection's ports and serves until ctx is done or a
// shutdown_request arrives. It returns whether the shutdown asked for a
// restart (Jupyter's manager then starts a new process). Run may be called
// once.
func (k *Kernel) Run(ctx context.Context) (restart bool, err error) {
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	c := k.cfg.Conn
	k.shell = zmq4.NewRouter(sctx, zmq4.WithLogger(zmqLogger(k.log)))
	k.control = zmq4.NewRouter(sctx, zmq4.WithLogger(zmqLogger(k.log)))
	k.stdin = zmq4.NewRouter(sctx, zmq4.WithLogger(zmqLogger(k.log)))
	k.iopub = zmq4.NewPub(sctx, zmq4.WithLogger(zmqLogger(k.log)))
	k.hb = zmq4.NewRouter(sctx, zmq4.WithLogger(zmqLogger(k.log)))
	socks := []struct {
		s    zmq4.Socket
		port int
		name string
	}{{k.shell, c.ShellPort, "shell"}, {k.control, c.ControlPort, "control"}, {k.stdin, c.StdinPort, "stdin"},
		{k.iopub, c.IOPubPort, "iopub"}, {k.hb, c.HBPort, "hb"}}
	defer func() {
		stop() // before Close: zmq4's accept loop exits on its context
		for _, s := range socks {
			_ = s.s.Close()
		}
	}()
	// Shell, control and stdin carry signed messages, checked as they are
	// read; iopub (subscriptions) and heartbeat (raw pings) only sizes.
	max := k.cfg.MaxMessageBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	signedTCP, signedIPC, err := registerTransport(wireCheck{max: max, key: append([]byte{}, k.sign.key...), refused: k.refused})
	if err != nil {
		return false, err
	}
	rawTCP, rawIPC, err := registerTransport(wireCheck{max: max, refused: k.refused})
	if err != nil {
		return false, err
	}
	for _, s := range socks {
		ep := c.listenEndpoint(signedTCP, signedIPC, s.port)
		if s.s == k.iopub || s.s == k.hb {
			ep = c.listenEndpoint(rawTCP, rawIPC, s.port)
		}
		if err := s.s.Listen(ep); err != nil {
			return false, fmt.Errorf("jupyter: listen %s on %s: %w", s.name, c.endpoint(s.port), err)
		}
	}
	k.log.Info("jupyter: kernel listening", "ip", c.IP, "shell", c.ShellPort, "control", c.ControlPort,
		"iopub", c.IOPubPort, "stdin", c.StdinPort, "hb", c.HBPort, "session", k.session)
	k.status("starting", nil)

	go k.heartbeat()
	go k.readLoop(k.shell, "shell", func(m *Message) {
		if m.Header.MsgType == "interrupt_request" || m.Header.MsgType == "shutdown_request" {
			k.handleControl(k.shell, m) // older clients send these on shell
			return
		}
		select {
		case k.shellQ <- m:
		case <-sctx.Done():
		}
	})
	go k.readLoop(k.control, "control", func(m *Message) { k.handleControl(k.control, m) })
	go k.readLoop(k.stdin, "stdin", func(m *Message) {
		k.log.Debug("jupyter: ignoring stdin message", "msg_type", m.Header.MsgType)
	})
	go k.shellLoop(sctx)

	select {
	case <-ctx.Done():
		k.Interrupt()
		return false, nil
	case restart = <-k.shutdown:
		// Give the PUB writer a moment to flush the last idle status.
		time.Sleep(50 * time.Millisecond)
		return restart, nil
	}
}

// Interrupt stops the running cell and aborts every execute request
// queued before it (as interrupt_request does); SIGINT calls it too.
func (k *Kernel) Interrupt() bool {
	return k.interrupt(time.Now(), time.Time{})
}

// abortWindow is how long after an interrupt an execute_request that its
// client dated before the interrupt_request is still aborted when it
// arrives (see interrupted).
const abortWindow = 5 * time.Second

// interrupt stops the running cell and notes the interrupt: it arrived
// at, dated date by its client (zero: unknown).
func (k *Kernel) interrupt(at, date time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.interruptAt, k.interruptDate = at, date
	if k.cancel != nil {
		k.cancel()
		return true
	}
	return false
}

// interrupted reports whether the execute request m was queued before the
// last interrupt, which aborts it (as ipykernel aborts its queue): it
// arrived before the interrupt did, or its client dated it before the
// interrupt_request and it arrived within abortWindow after it. The dates
// catch what was still in the sockets' buffers when the interrupt came (a
// "Run all" of a long notebook: the interrupt aborts all of it), while a
// request sent after the interrupt runs.
func (k *Kernel) interrupted(m *Message) bool {
	k.mu.Lock()
	at, date := k.interruptAt, k.interruptDate
	k.mu.Unlock()
	if at.IsZero() {
		return false
	}
	if m.received.Before(at) {
		return true
	}
	if date.IsZero() || m.received.After(at.Add(abortWindow)) {
		return false
	}
	d, err := time.Parse(time.RFC3339Nano, m.Header.Date)
	return err == nil && d.Before(date)
}

// refused counts and logs a connection closed for what it sent: a
// message over the size limit or wrongly signed.
func (k *Kernel) refused(err error) {
	if errors.Is(err, ErrSignature) {
		k.mu.Lock()
		k.dropped++
		k.mu.Unlock()
	}
	k.log.Warn("jupyter: dropped a message and closed its connection", "err", err)
}

// heartbeat echoes every heartbeat message back to its sender.
func (k *Kernel) heartbeat() {
	for {
		msg, err := k.hb.Recv()
		if err != nil {
			return
		}
		k.sendMu.Lock()
		err = k.hb.Send(msg)
		k.sendMu.Unlock()
		if err != nil {
			k.log.Debug("jupyter: heartbeat send", "err", err)
		}
	}
}

// readLoop receives messages on s, checks their signatures and hands the
// good ones to handle.
func (k *Kernel) readLoop(s zmq4.Socket, name string, handle func(*Message)) {
	for {
		zm, err := s.Recv()
		if err != nil {
			return
		}
		m, err := k.sign.decode(zm.Frames)
		if m != nil {
			m.received = time.Now()
		}
		if err != nil {
			if errors.Is(err, ErrSignature) {
				k.mu.Lock()
				k.dropped++
				k.mu.Unlock()
			}
			k.log.Warn("jupyter: dropped a message", "channel", name, "err", err)
			continue
		}
		handle(m)
	}
}

// send signs and sends m on s.
func (k *Kernel) send(s zmq4.Socket, m *Message) {
	frames, err := k.sign.encode(m)
	if err != nil {
		k.log.Error("jupyter: encode", "msg_type", m.Header.MsgType, "err", err)
		return
	}
	k.sendMu.Lock()
	defer k.sendMu.Unlock()
	if err := s.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		k.log.Warn("jupyter: send", "msg_type", m.Header.MsgType, "err", err)
	}
}

// reply answers req on s (shell or control) with msgType and content.
func (k *Kernel) reply(s zmq4.Socket, req *Message, msgType string, content any) {
	m, err := newMessage(msgType, k.session, req, content)
	if err != nil {
		k.log.Error("jupyter: reply", "err", err)
		return
	}
	m.Identities = req.Identities
	k.send(s, m)
}

// publish sends an iopub message answering parent (nil: none).
func (k *Kernel) publish(msgType string, parent *Message, content any) {
	m, err := newMessage(msgType, k.session, parent, content)
	if err != nil {
		k.log.Error("jupyter: publish", "err", err)
		return
	}
	m.Identities = [][]byte{[]byte(msgType)}
	k.send(k.iopub, m)
}

func (k *Kernel) status(state string, parent *Message) {
	k.publish("status", parent, map[string]string{"execution_state": state})
}

// handleControl answers a control request at once.
func (k *Kernel) handleControl(s zmq4.Socket, m *Message) {
	k.status("busy", m)
	defer k.status("idle", m)
	switch m.Header.MsgType {
	case "interrupt_request":
		date, _ := time.Parse(time.RFC3339Nano, m.Header.Date) // zero when it has none
		interrupted := k.interrupt(m.received, date)
		k.log.Info("jupyter: interrupt", "running", interrupted)
		k.reply(s, m, "interrupt_reply", map[string]any{"status": "ok"})
	case "shutdown_request":
		var req struct {
			Restart bool `json:"restart"`
		}
		_ = json.Unmarshal(m.Content, &req)
		k.Interrupt()
		k.reply(s, m, "shutdown_reply", map[string]any{"status": "ok", "restart": req.Restart})
		select {
		case k.shutdown <- req.Restart:
		default:
		}
	case "kernel_info_request":
		k.reply(s, m, "kernel_info_reply", k.kernelInfo())
	default:
		k.log.Debug("jupyter: ignoring control message", "msg_type", m.Header.MsgType)
	}
}

// shellLoop handles shell requests one at a time.
func (k *Kernel) shellLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-k.shellQ:
			if m.Header.MsgType == "execute_request" && k.interrupted(m) {
				k.abort(m)
				continue
			}
			if k.handleShell(ctx, m) {
				k.abortHeld()
			}
		}
	}
}

// holdQueued takes the requests already queued when a cell failed, before
// its error reply is sent: with stop_on_error (the default, as in
// ipykernel) "Run all" stops at the first error, while anything the client
// sends after it has seen the error runs. Only the shell goroutine calls it.
func (k *Kernel) holdQueued() {
	for {
		select {
		case m := <-k.shellQ:
			k.held = append(k.held, m)
		default:
			return
		}
	}
}

// abortHeld answers the held execute requests with status "aborted" and
// handles the other held requests.
func (k *Kernel) abortHeld() {
	held := k.held
	k.held = nil
	for _, m := range held {
		if m.Header.MsgType != "execute_request" {
			k.handleShell(context.Background(), m)
			continue
		}
		k.abort(m)
	}
}

// abort answers the execute request m with status "aborted", without
// running it.
func (k *Kernel) abort(m *Message) {
	k.status("busy", m)
	k.reply(k.shell, m, "execute_reply", map[string]any{"status": "aborted", "execution_count": k.x.ExecutionCount()})
	k.status("idle", m)
}

// handleShell handles one shell request; it reports whether queued
// executions should be aborted.
func (k *Kernel) handleShell(ctx context.Context, m *Message) (abort bool) {
	k.status("busy", m)
	defer k.status("idle", m)
	switch m.Header.MsgType {
	case "execute_request":
		return k.execute(ctx, m)
	case "kernel_info_request":
		k.reply(k.shell, m, "kernel_info_reply", k.kernelInfo())
	case "complete_request":
		var req struct {
			Code      string `json:"code"`
			CursorPos int    `json:"cursor_pos"`
		}
		_ = json.Unmarshal(m.Content, &req)
		k.reply(k.shell, m, "complete_reply", k.complete(ctx, req.Code, req.CursorPos))
	case "inspect_request":
		var req struct {
			Code        string `json:"code"`
			CursorPos   int    `json:"cursor_pos"`
			DetailLevel int    `json:"detail_level"`
		}
		_ = json.Unmarshal(m.Content, &req)
		k.reply(k.shell, m, "inspect_reply", k.inspect(ctx, req.Code, req.CursorPos))
	case "is_complete_request":
		var req struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(m.Content, &req)
		k.reply(k.shell, m, "is_complete_reply", isComplete(req.Code))
	case "comm_info_request":
		k.reply(k.shell, m, "comm_info_reply", map[string]any{"status": "ok", "comms": map[string]any{}})
	case "history_request":
		k.reply(k.shell, m, "history_reply", map[string]any{"status": "ok", "history": []any{}})
	case "comm_open":
		// No comm targets: close it, as ipykernel does for unknown targets.
		var req struct {
			CommID string `json:"comm_id"`
		}
		_ = json.Unmarshal(m.Content, &req)
		k.publish("comm_close", m, map[string]any{"comm_id": req.CommID, "data": map[string]any{}})
	default:
		k.log.Debug("jupyter: ignoring shell message", "msg_type", m.Header.MsgType)
	}
	return false
}

// kernelInfo is the content of kernel_info_reply.
func (k *Kernel) kernelInfo() map[string]any {
	v := k.cfg.Version
	if v == "" {
		v = "dev"
	}
	return map[string]any{
		"status":                 "ok",
		"protocol_version":       ProtocolVersion,
		"implementation":         "cachebook",
		"implementation_version": v,
		"language_info": map[string]any{
			"name":            "sql",
			"version":         "",
			"mimetype":        "application/sql",
			"file_extension":  ".sql",
			"codemirror_mode": "sql",
			"pygments_lexer":  "sql",
		},
		"banner": "cachebook " + v + ": SQL GROUP BY on a pure-Go columnar engine, with the memory hierarchy beside every result.\n" +
			"Cell magics: " + magicList(k.x.Registry()),
		"help_links": []any{},
		"debugger":   false,
	}
}

func magicList(r *kernel.Registry) string {
	var s []string
	for _, kind := range r.Kinds() {
		s = append(s, "%%"+kind)
	}
	return strings.Join(s, " ")
}

// CellFromCode turns a Jupyter code cell into a kernel cell: SQL, unless
// its first line is a cell magic naming another kind (see
// notebook.ParseMagic).
func CellFromCode(code string) kernel.Cell {
	kind, name, attrs, body, ok := notebook.ParseMagic(code)
	if !ok {
		return kernel.Cell{Kind: kernel.KindSQL, Source: code}
	}
	c := &notebook.Cell{Kind: kind, Name: name, Attrs: attrs, Source: strings.TrimSuffix(body, "\n")}
	return kernel.Cell{Kind: string(kind), Source: c.ExecSource(), Attrs: attrs}
}

// execute runs an execute_request; it reports whether queued executions
// should be aborted.
func (k *Kernel) execute(ctx context.Context, m *Message) (abort bool) {
	var req struct {
		Code        string `json:"code"`
		Silent      bool   `json:"silent"`
		StopOnError *bool  `json:"stop_on_error"`
	}
	if err := json.Unmarshal(m.Content, &req); err != nil {
		ec := map[string]any{"status": "error", "execution_count": k.x.ExecutionCount(), "ename": kernel.ErrBadMessage,
			"evalue": "execute_request content: " + err.Error(), "traceback": []string{}}
		k.reply(k.shell, m, "execute_reply", ec)
		return false
	}
	cell := CellFromCode(req.Code)
	cell.Predict, cell.Guess = requestPrediction(m.Metadata)
	cctx, cancel := context.WithCancel(ctx)
	k.mu.Lock()
	k.cancel = cancel
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.cancel = nil
		k.mu.Unlock()
		cancel()
	}()
	var liveMu sync.Mutex
	live := map[string]string{} // display id → what it showed live
	emit := func(km kernel.Message) {
		if id, what := liveDisplay(km); id != "" {
			liveMu.Lock()
			live[id] = what
			liveMu.Unlock()
		}
		k.forward(km, m, req.Code, req.Silent)
	}
	rep, err := k.x.Execute(cctx, cell, emit)
	// The final chart or counters are in the result; shrink the live
	// displays to a note so a saved notebook does not show them twice. (A
	// cell that failed or was interrupted keeps its partial live display.)
	liveMu.Lock()
	if err != nil || req.Silent {
		clear(live)
	}
	for id, what := range live {
		note := "the final " + what + " are in the cell's result"
		k.publish("update_display_data", m, map[string]any{
			"data": map[string]any{MIMEText: note, MIMEHTML: "<small>" + note + "</small>",
				kernel.MIMEProgress: kernel.Progress{Done: 1, Total: 1}},
			"metadata": map[string]any{}, "transient": map[string]any{"display_id": id}})
	}
	liveMu.Unlock()
	var f *kernel.Failure
	stop := req.StopOnError == nil || *req.StopOnError
	if err != nil && stop {
		k.holdQueued()
	}
	switch {
	case errors.As(err, &f):
		k.reply(k.shell, m, "execute_reply", map[string]any{
			"status": "error", "execution_count": rep.ExecutionCount,
			"ename": f.Ename, "evalue": f.Evalue, "traceback": traceback(&f.ErrorContent),
		})
		return stop
	case err != nil:
		k.reply(k.shell, m, "execute_reply", map[string]any{"status": "error", "execution_count": k.x.ExecutionCount(),
			"ename": kernel.ErrKernel, "evalue": err.Error(), "traceback": []string{err.Error()}})
		return stop
	}
	k.reply(k.shell, m, "execute_reply", map[string]any{
		"status": "ok", "execution_count": rep.ExecutionCount, "user_expressions": map[string]any{}, "payload": []any{},
	})
	return false
}

// traceback is the error's traceback for Jupyter: the kernel's lines (for
// an SQL error the statement line and a caret under the position), with
// the error name in red as terminals and front ends show it.
func traceback(ec *kernel.ErrorContent) []string {
	tb := append([]string(nil), ec.Traceback...)
	if len(tb) == 0 {
		tb = []string{ec.Ename + ": " + ec.Evalue}
	}
	colored := "\x1b[0;31m" + ec.Ename + "\x1b[0m: " + ec.Evalue
	if last := tb[len(tb)-1]; last == ec.Evalue || last == ec.Ename+": "+ec.Evalue {
		tb[len(tb)-1] = colored
	} else {
		tb = append(tb, colored)
	}
	return tb
}

// forward re-sends one executor message as a Jupyter iopub message
// answering req, its MIME bundles made renderable by Bundle. A silent
// execution publishes nothing (Jupyter's "silent": no broadcast; the reply
// still says how it went).
func (k *Kernel) forward(km kernel.Message, req *Message, code string, silent bool) {
	if silent {
		return
	}
	switch km.Header.MsgType {
	case kernel.MsgExecuteInput:
		var c kernel.ExecuteInput
		if decode(km, &c) == nil {
			k.publish("execute_input", req, map[string]any{"code": code, "execution_count": c.ExecutionCount})
		}
	case kernel.MsgStream:
		var c kernel.Stream
		if decode(km, &c) == nil {
			k.publish("stream", req, map[string]any{"name": c.Name, "text": c.Text})
		}
	case kernel.MsgDisplayData, kernel.MsgUpdateDisplayData:
		var c kernel.DisplayData
		if decode(km, &c) != nil {
			return
		}
		out := map[string]any{"data": Bundle(c.Data), "metadata": map[string]any{}, "transient": map[string]any{}}
		if c.Transient != nil {
			out["transient"] = map[string]any{"display_id": c.Transient.DisplayID}
		} else if km.Header.MsgType == kernel.MsgUpdateDisplayData {
			return // an update must name its display
		}
		k.publish(km.Header.MsgType, req, out)
	case kernel.MsgExecuteResult:
		var c kernel.ExecuteResult
		if decode(km, &c) == nil {
			k.publish("execute_result", req, map[string]any{"execution_count": c.ExecutionCount, "data": Bundle(c.Data), "metadata": map[string]any{}})
		}
	case kernel.MsgError:
		var c kernel.ErrorContent
		if decode(km, &c) == nil {
			k.publish("error", req, map[string]any{"ename": c.Ename, "evalue": c.Evalue, "traceback": traceback(&c)})
		}
	}
}

// liveDisplay returns the display id of a live measurement or counters
// display and what it shows ("" if km is not one).
func liveDisplay(km kernel.Message) (id, what string) {
	if km.Header.MsgType != kernel.MsgDisplayData {
		return "", ""
	}
	var c kernel.DisplayData
	if decode(km, &c) != nil || c.Transient == nil {
		return "", ""
	}
	if _, ok := c.Data[kernel.MIMEMeasurement]; ok {
		return c.Transient.DisplayID, "measurements"
	}
	if _, ok := c.Data[kernel.MIMECounters]; ok {
		return c.Transient.DisplayID, "counters"
	}
	return "", ""
}

// decode reads a kernel message's content into v, whether it holds the
// typed value or JSON.
func decode[T any](m kernel.Message, v *T) error {
	switch c := m.Content.(type) {
	case T:
		*v = c
		return nil
	case *T:
		if c == nil {
			return errors.New("nil content")
		}
		*v = *c
		return nil
	}
	return m.DecodeContent(v)
}

// zmqLogger routes the ZeroMQ library's log lines to the kernel's logger.
func zmqLogger(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(l.Handler(), slog.LevelWarn)
}

// requestPrediction reads a cell's prediction from an execute_request's
// metadata: {"cachebook": {"predict": {...}, "guess": {...}}}, the members
// that an exported notebook keeps in the cell's metadata.cachebook.meta
// (package notebook). A front end or script that forwards them gets the
// prediction display after the run; anything that does not decode is
// ignored (the cell still runs).
func requestPrediction(meta json.RawMessage) (*predict.Spec, *predict.Guess) {
	var m struct {
		Cachebook struct {
			Predict json.RawMessage `json:"predict"`
			Guess   json.RawMessage `json:"guess"`
			Meta    *struct {
				Predict json.RawMessage `json:"predict"`
				Guess   json.RawMessage `json:"guess"`
			} `json:"meta"`
		} `json:"cachebook"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return nil, nil
	}
	sp, gu := m.Cachebook.Predict, m.Cachebook.Guess
	if mm := m.Cachebook.Meta; mm != nil && len(sp) == 0 {
		sp, gu = mm.Predict, mm.Guess
	}
	if len(sp) == 0 {
		return nil, nil
	}
	s, err := predict.Decode(sp)
	if err != nil {
		return nil, nil
	}
	var g *predict.Guess
	if len(gu) > 0 && string(gu) != "null" {
		if g, err = predict.DecodeGuess(gu); err != nil || s.CheckGuess(g) != nil {
			g = nil
		}
	}
	return s, g
}
