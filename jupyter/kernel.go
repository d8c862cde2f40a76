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

// Kernel is one running Jupyter kernel: its sockets, and a subscription
// of the shared kernel (kernel.Kernel) its cells run on. Execute and
// interrupt requests go to the shared kernel, which queues, runs, aborts
// and interrupts cells as it does for the web notebook; Kernel translates
// its frames into Jupyter messages (translate.go). The other requests
// (kernel_info, completion, inspection, history, ...) are answered here,
// at once, also while a cell runs.
type Kernel struct {
	cfg     Config
	log     *slog.Logger
	sign    signer
	mgr     *kernel.Manager
	sk      *kernel.Kernel // the shared kernel the cells run on
	sub     *kernel.Subscription
	reg     *kernel.Registry // for the banner and magic completion
	db      *engine.DB       // for completion and inspection (nil: no engine)
	session string           // this kernel process's session id

	shell, control, stdin, iopub, hb zmq4.Socket
	sendMu                           sync.Mutex // serialises sends (all sockets)

	mu       sync.Mutex
	shutdown chan bool // receives restart when a shutdown_request came
	dropped  int       // messages refused for a bad signature
	// reqs are the execute requests sent to the shared kernel and not
	// yet answered, by message id.
	reqs    map[string]*request
	history history
}

// abortWindow is how long after an interrupt the execute requests that
// their client sent before it are still aborted when they arrive, and
// stopOnErrorWait how long a failed cell's reply waits after its request
// came, aborting all that arrives meanwhile (see kernel.ManagerConfig):
// a "Run all" sends every cell at once, and a cell that fails at once
// must stop the ones still on their way, as ipykernel does.
const (
	abortWindow     = 2 * time.Second
	stopOnErrorWait = 100 * time.Millisecond
)

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
	mgr, err := kernel.NewManager(kernel.ManagerConfig{
		Executor: xc, Logger: log, AbortWindow: abortWindow, StopOnErrorWait: stopOnErrorWait,
		// One session, always subscribed; a "Run all" of a long
		// notebook queues every cell.
		MaxQueue: 100000, SubscriberBuffer: 1 << 16,
	})
	if err != nil {
		return nil, fmt.Errorf("jupyter: %w", err)
	}
	sub, err := mgr.Attach("", 0)
	if err != nil {
		return nil, fmt.Errorf("jupyter: %w", err)
	}
	return &Kernel{
		cfg: cfg, log: log, sign: signer{key: []byte(cfg.Conn.Key)}, mgr: mgr, sk: sub.Kernel(), sub: sub,
		reg: mgr.Registry(), db: xc.DB, session: kernel.NewID(), shutdown: make(chan bool, 1),
		reqs: map[string]*request{},
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
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.mgr.Close(cctx); err != nil {
			k.log.Warn("jupyter: closing the kernel", "err", err)
		}
	}()
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
	go k.translate(k.sub)
	go k.readLoop(k.shell, "shell", func(m *Message) {
		if m.Header.MsgType == "interrupt_request" || m.Header.MsgType == "shutdown_request" {
			k.handleControl(k.shell, m) // older clients send these on shell
			return
		}
		k.handleShell(sctx, m)
	})
	go k.readLoop(k.control, "control", func(m *Message) { k.handleControl(k.control, m) })
	go k.readLoop(k.stdin, "stdin", func(m *Message) {
		k.log.Debug("jupyter: ignoring stdin message", "msg_type", m.Header.MsgType)
	})

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
// queued (as interrupt_request does); SIGINT calls it too.
func (k *Kernel) Interrupt() {
	k.interrupt(time.Time{})
}

// interrupt asks the shared kernel to stop the running cell and abort the
// queued ones. date is the interrupt_request's date on its client's clock
// (zero: unknown): requests that client sent before it and that arrive
// shortly after it are aborted too, so that an interrupt stops all of a
// "Run all" (see abortWindow).
func (k *Kernel) interrupt(date time.Time) {
	h := kernel.Header{MsgID: kernel.NewID(), MsgType: kernel.MsgInterruptRequest}
	if !date.IsZero() {
		h.Date = date.UTC().Format(time.RFC3339Nano)
	}
	if err := k.sk.Handle(nil, &kernel.Message{Channel: kernel.ChannelControl, Header: h}); err != nil {
		k.log.Warn("jupyter: interrupt", "err", err)
	}
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
		k.interrupt(date)
		k.log.Info("jupyter: interrupt")
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

// handleShell handles one shell request: an execute_request goes to the
// shared kernel's queue, the others are answered at once.
func (k *Kernel) handleShell(ctx context.Context, m *Message) {
	if m.Header.MsgType == "execute_request" {
		k.execute(m)
		return
	}
	k.status("busy", m)
	defer k.status("idle", m)
	switch m.Header.MsgType {
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
		var req historyRequest
		_ = json.Unmarshal(m.Content, &req)
		k.mu.Lock()
		h := k.history.answer(req)
		k.mu.Unlock()
		k.reply(k.shell, m, "history_reply", map[string]any{"status": "ok", "history": h})
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
			"Cell magics: " + magicList(k.reg),
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
