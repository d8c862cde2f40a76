package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"cachebook/engine/units"
	"cachebook/kernel"
)

// writeWait bounds one websocket write.
const writeWait = 10 * time.Second

// handleKernel upgrades GET /api/kernel?session=ID&since=N to a websocket
// attached to kernel session ID (docs/protocol.md §1).
func (s *Server) handleKernel(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, true) {
		return
	}
	q := r.URL.Query()
	id := q.Get("session")
	if id != "" && !kernel.ValidSessionID(id) {
		s.refuse(w, r, http.StatusBadRequest, "bad_request", kernel.ErrBadSessionID.Error())
		return
	}
	var since uint64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.refuse(w, r, http.StatusBadRequest, "bad_request", "since must be a sequence number")
			return
		}
		since = n
	}
	if !websocket.IsWebSocketUpgrade(r) {
		s.refuse(w, r, http.StatusBadRequest, "bad_request", "this endpoint speaks websocket (cachebook-kernel/1)")
		return
	}
	who := s.identify(r)
	if who.role == roleLearner {
		// A learner's sessions live in its own namespace (class.go).
		sid, err := s.class.session(who.learner, id)
		if errors.Is(err, errTooMany) {
			// Over the tab limit: the page can read a close frame's
			// reason, not a refused handshake's status.
			s.closeUpgrade(w, r, CloseTooManySessions, err)
			return
		}
		if err != nil {
			code := statusOf(err)
			if errors.Is(err, kernel.ErrBadSessionID) {
				code = http.StatusBadRequest
			}
			s.refuse(w, r, code, "class", err.Error())
			return
		}
		id = sid
		defer func() {
			s.stopSessions(s.class.release(who.learner, sid), "a learner's tab closed, over its detached sessions")
		}()
	}
	sub, err := s.mgr.Attach(id, since)
	if err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, kernel.ErrBadSessionID) {
			code = http.StatusBadRequest
		}
		s.refuse(w, r, code, "attach", err.Error())
		return
	}
	var hdr http.Header
	if _, source := tokenFrom(r); source != "cookie" && !s.cfg.NoToken && who.role == roleTeacher {
		hdr = http.Header{"Set-Cookie": {s.tokenCookie().String()}}
	}
	if !s.enterConn() {
		sub.Close()
		s.refuse(w, r, http.StatusServiceUnavailable, "closing", "the server is shutting down")
		return
	}
	defer s.connWG.Done()
	conn, err := s.up.Upgrade(w, r, hdr)
	if err != nil {
		sub.Close()
		s.metrics.rejected.WithLabelValues("upgrade").Inc()
		s.log.Warn("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	s.metrics.connections.Add(1)
	defer s.metrics.connections.Add(-1)
	log := s.log.With("session", sub.Kernel().ID(), "remote", r.RemoteAddr)
	log.Info("websocket connected", "since", since, "replay", len(sub.Replay))

	if who.role == roleLearner {
		s.class.connected(who.learner, 1)
		defer s.class.connected(who.learner, -1)
	}
	c := &wsConn{s: s, conn: conn, sub: sub, done: make(chan struct{}), who: who, nd: s.notebooksFor(who)}
	go c.writeLoop()
	reason, refused := c.readLoop()
	sub.Close()
	<-c.done
	if refused {
		// Lingering close: read and discard what the client still sends
		// (the rest of an oversized frame) until it answers our close
		// frame, so closing does not reset the connection before the
		// client has read the close code.
		nc := conn.NetConn()
		_ = nc.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = io.Copy(io.Discard, nc)
	}
	_ = conn.Close()
	log.Info("websocket closed", "reason", reason)
}

// CloseTooManySessions is the websocket close code that refuses a
// learner's tab over its session limit (ClassConfig.MaxSessions); the
// close reason says so in words. The page shows it and tries again now
// and then.
const CloseTooManySessions = 4429

// closeUpgrade completes the websocket handshake only to close it at once
// with code and err's text (at most 123 bytes, the close frame's limit):
// a browser's page cannot read the status of a refused handshake.
func (s *Server) closeUpgrade(w http.ResponseWriter, r *http.Request, code int, err error) {
	s.metrics.rejected.WithLabelValues("class").Inc()
	s.log.Warn("websocket refused", "remote", r.RemoteAddr, "code", code, "err", err)
	conn, uerr := s.up.Upgrade(w, r, nil)
	if uerr != nil {
		return
	}
	msg := strings.TrimPrefix(err.Error(), errTooMany.Error()+": ")
	for len(msg) > 123 {
		_, size := utf8.DecodeLastRuneInString(msg)
		msg = msg[:len(msg)-size]
	}
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, msg), time.Now().Add(writeWait))
	// Wait briefly for the client's close so that ours is read first.
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, _, _ = conn.ReadMessage()
	_ = conn.Close()
}

// wsConn is one websocket attached to a session subscription.
type wsConn struct {
	s    *Server
	conn *websocket.Conn
	sub  *kernel.Subscription
	done chan struct{} // closed when writeLoop returns
	// who sent the upgrade; nd is its notebook folder.
	who identity
	nd  *NotebookDir
}

// closeWith sends a close frame (safe to call from any goroutine).
func (c *wsConn) closeWith(code int, text string) {
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(writeWait))
}

// readLoop reads client frames until the connection ends and returns why,
// and whether the server refused a frame (and sent a close frame).
func (c *wsConn) readLoop() (string, bool) {
	s := c.s
	c.conn.SetReadLimit(int64(s.cfg.MaxMessageBytes))
	_ = c.conn.SetReadDeadline(time.Now().Add(s.cfg.PongWait))
	c.conn.SetPongHandler(func(string) error {
		return c.conn.SetReadDeadline(time.Now().Add(s.cfg.PongWait))
	})
	for {
		typ, data, err := c.conn.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				// gorilla has already sent close 1009.
				s.metrics.rejected.WithLabelValues("too_large").Inc()
				return "message too big", true
			}
			return err.Error(), false
		}
		_ = c.conn.SetReadDeadline(time.Now().Add(s.cfg.PongWait))
		if typ != websocket.TextMessage {
			s.metrics.rejected.WithLabelValues("binary").Inc()
			c.closeWith(websocket.CloseUnsupportedData, "cachebook-kernel/1 uses JSON text frames")
			return "binary frame", true
		}
		m, err := kernel.Decode(data, s.cfg.MaxMessageBytes)
		if err != nil {
			c.protocolError(nil, err.Error())
			continue
		}
		c.handle(m)
	}
}

// protocolError answers a frame the server cannot use, on this connection.
func (c *wsConn) protocolError(parent *kernel.Message, msg string) {
	c.s.metrics.rejected.WithLabelValues("bad_message").Inc()
	var ph kernel.Header
	if parent != nil {
		ph = parent.Header
	}
	c.sub.Send(kernel.NewMessage(kernel.ChannelIOPub, kernel.MsgProtocolError, c.sub.Kernel().KernelSession(), ph,
		kernel.ProtocolError{Ename: kernel.ErrBadMessage, Evalue: msg}))
}

// handle dispatches one request.
func (c *wsConn) handle(m *kernel.Message) {
	var (
		v   any
		err error
	)
	var replyType string
	switch m.Header.MsgType {
	case kernel.MsgLessonListRequest:
		replyType = kernel.MsgLessonListReply
		v, err = c.s.lessonList()
	case kernel.MsgLessonOpenRequest:
		replyType = kernel.MsgLessonOpenReply
		var req struct {
			ID string `json:"id"`
		}
		if err = m.DecodeContent(&req); err == nil {
			v, err = c.s.lessonOpen(req.ID)
		}
	case kernel.MsgNotebookListRequest:
		replyType = kernel.MsgNotebookListReply
		v, err = c.s.notebookList(c.nd)
	case kernel.MsgNotebookOpenRequest:
		replyType = kernel.MsgNotebookOpenReply
		var req struct {
			Path string `json:"path"`
		}
		if err = m.DecodeContent(&req); err == nil {
			v, err = c.s.notebookOpen(c.nd, req.Path)
		}
	case kernel.MsgNotebookSaveRequest:
		replyType = kernel.MsgNotebookSaveReply
		var req struct {
			Path     string `json:"path"`
			Notebook *Doc   `json:"notebook"`
		}
		if err = m.DecodeContent(&req); err == nil {
			if req.Notebook == nil {
				req.Notebook = &Doc{}
			}
			v, err = c.s.notebookSave(c.nd, req.Path, req.Notebook)
		}
	default:
		if c.who.role == roleLearner && m.Header.MsgType == kernel.MsgExecuteRequest {
			if ename, evalue := c.s.class.admit(c.who.learner, m); ename != "" {
				c.refuseCell(m, ename, evalue)
				return
			}
		}
		if herr := c.sub.Kernel().Handle(c.sub, m); herr != nil {
			c.protocolError(m, herr.Error())
		}
		return
	}
	if err != nil {
		v = errorReply(err)
	}
	ch := m.Channel
	if ch == "" {
		ch = kernel.ChannelShell
	}
	c.sub.Send(kernel.NewMessage(ch, replyType, c.sub.Kernel().KernelSession(), m.Header, v))
}

// refuseCell answers an execute_request classroom mode refused (a locked
// cell, a learner over its limit) with an error and a failed reply.
func (c *wsConn) refuseCell(m *kernel.Message, ename, evalue string) {
	var er kernel.ExecuteRequest
	_ = m.DecodeContent(&er)
	ks := c.sub.Kernel().KernelSession()
	c.sub.Send(kernel.NewMessage(kernel.ChannelIOPub, kernel.MsgError, ks, m.Header,
		kernel.ErrorContent{Ename: ename, Evalue: evalue, Traceback: []string{ename + ": " + evalue}, CellID: er.CellID}))
	ch := m.Channel
	if ch == "" {
		ch = kernel.ChannelShell
	}
	c.sub.Send(kernel.NewMessage(ch, kernel.MsgExecuteReply, ks, m.Header,
		kernel.ExecuteReply{Status: kernel.StatusError, CellID: er.CellID, Ename: ename, Evalue: evalue}))
}

// writeLoop sends the welcome, the replay and then live frames, and pings.
func (c *wsConn) writeLoop() {
	defer close(c.done)
	write := func(data []byte) bool {
		_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
		return c.conn.WriteMessage(websocket.TextMessage, data) == nil
	}
	fail := func() {
		// Unblock the reader so the handler can finish.
		_ = c.conn.Close()
	}
	if !write(withInstance(c.sub.Welcome, c.s.instance)) {
		fail()
		return
	}
	for _, f := range c.sub.Replay {
		if !write(c.capFrame(f)) {
			fail()
			return
		}
	}
	ping := time.NewTicker(c.s.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case data, ok := <-c.sub.C:
			if !ok {
				switch c.sub.Reason() {
				case kernel.CloseSlow:
					c.closeWith(websocket.CloseTryAgainLater, "client too slow: reconnect with since")
				case kernel.CloseSessionEnded:
					c.closeWith(websocket.CloseNormalClosure, "session ended")
				case kernel.CloseServerShutdown:
					c.closeWith(websocket.CloseGoingAway, "server shutting down")
				}
				fail()
				return
			}
			if !write(c.capFrame(data)) {
				fail()
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				fail()
				return
			}
		}
	}
}

// withInstance adds the server's instance id to an encoded welcome
// (content.server_instance, docs/protocol.md §2), so that a tab that
// reconnects can tell that the server restarted.
func withInstance(welcome []byte, instance string) []byte {
	var m struct {
		Channel      string                     `json:"channel"`
		Header       json.RawMessage            `json:"header"`
		ParentHeader json.RawMessage            `json:"parent_header"`
		Metadata     json.RawMessage            `json:"metadata"`
		Content      map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(welcome, &m); err != nil || m.Content == nil {
		return welcome
	}
	id, _ := json.Marshal(instance)
	m.Content["server_instance"] = id
	b, err := json.Marshal(&m)
	if err != nil {
		return welcome
	}
	return b
}

// ErrOutputTooLarge is the ename of the error that replaces a frame larger
// than Config.MaxFrameBytes.
const ErrOutputTooLarge = "OutputTooLarge"

// capFrame returns data, or, when it is larger than the frame cap, an
// error message in its place: same channel, sequence number and parent (so
// the cell shows the error and the replay has no hole), saying how large
// the output was and what to do.
func (c *wsConn) capFrame(data []byte) []byte {
	max := c.s.cfg.MaxFrameBytes
	if len(data) <= max {
		return data
	}
	c.s.metrics.rejected.WithLabelValues("frame_too_large").Inc()
	var m struct {
		Channel      string        `json:"channel"`
		Header       kernel.Header `json:"header"`
		ParentHeader kernel.Header `json:"parent_header"`
		Seq          uint64        `json:"seq"`
	}
	_ = json.Unmarshal(data, &m) // content is skipped, not kept
	what := m.Header.MsgType
	if what == "" {
		what = "message"
	}
	msg := fmt.Sprintf("this %s is %s, more than the %s one message may carry, so it was not sent", what,
		units.HumanBytes(int64(len(data))), units.HumanBytes(int64(max)))
	if m.ParentHeader.MsgType == kernel.MsgExecuteRequest {
		msg += "; select fewer columns or rows, or split the cell into fewer statements"
	}
	c.s.log.Warn("frame over the cap replaced", "type", what, "bytes", len(data), "max", max)
	ch := m.Channel
	if ch == "" {
		ch = kernel.ChannelIOPub
	}
	// An output becomes an error output; a reply (execute_reply, a
	// notebook too large to open) stays a reply, failed, so that the
	// request it answers does not wait for ever.
	typ := kernel.MsgError
	var content any = kernel.ErrorContent{Ename: ErrOutputTooLarge, Evalue: msg, Traceback: []string{msg}}
	if strings.HasSuffix(m.Header.MsgType, "_reply") {
		typ = m.Header.MsgType
		content = map[string]any{"status": kernel.StatusError, "ename": ErrOutputTooLarge, "evalue": msg}
	}
	em := kernel.NewMessage(ch, typ, m.Header.Session, m.ParentHeader, content)
	em.Seq = m.Seq
	b, err := kernel.Encode(&em)
	if err != nil {
		return data[:0]
	}
	return b
}
