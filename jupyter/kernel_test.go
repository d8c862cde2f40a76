package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"cachebook/engine"
	"cachebook/engine/gen/gentest"
	"cachebook/kernel"
)

// client is a minimal Jupyter client over zmq4, for in-process tests.
type client struct {
	t       *testing.T
	sign    signer
	session string
	shell   zmq4.Socket
	control zmq4.Socket
	iopub   zmq4.Socket

	mu    sync.Mutex
	pub   []*Message
	pubCh chan struct{}
	// early holds the replies reply read while it waited for another
	// one, by the id of the request they answer (replies to different
	// requests may come in any order).
	early map[string]*Message
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// startKernel runs a kernel in this process on free ports and connects a
// client to it.
func startKernel(t *testing.T) (*Kernel, *client, <-chan error) {
	t.Helper()
	p := freePorts(t, 5)
	return startKernelOn(t, &ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: p[0], ControlPort: p[1], IOPubPort: p[2],
		StdinPort: p[3], HBPort: p[4], Key: "test-key", SignatureScheme: "hmac-sha256"})
}

func startKernelOn(t *testing.T, conn *ConnectionInfo) (*Kernel, *client, <-chan error) {
	t.Helper()
	return startKernelWith(t, Config{Conn: conn})
}

// startKernelWith is startKernelOn with more of the kernel's Config.
func startKernelWith(t *testing.T, cfg Config) (*Kernel, *client, <-chan error) {
	t.Helper()
	conn := cfg.Conn
	p := []int{conn.ShellPort, conn.ControlPort, conn.IOPubPort}
	db, err := engine.Open(engine.Options{DataDir: gentest.HitsDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Executor, cfg.Logger = kernel.Config{DB: db}, slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := k.Run(context.Background())
		done <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &client{t: t, sign: signer{key: []byte(conn.Key)}, session: kernel.NewID(), pubCh: make(chan struct{}, 1)}
	c.shell = zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(c.session)))
	c.control = zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(c.session)))
	c.iopub = zmq4.NewSub(ctx)
	for _, d := range []struct {
		s    zmq4.Socket
		port int
	}{{c.shell, p[0]}, {c.control, p[1]}, {c.iopub, p[2]}} {
		var err error
		for range 50 { // the kernel may not listen yet
			if err = d.s.Dial(conn.endpoint(d.port)); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			zm, err := c.iopub.Recv()
			if err != nil {
				return
			}
			m, err := c.sign.decode(zm.Frames)
			if err != nil {
				t.Errorf("iopub message: %v", err)
				continue
			}
			c.mu.Lock()
			c.pub = append(c.pub, m)
			c.mu.Unlock()
			select {
			case c.pubCh <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		c.shell.Close()
		c.control.Close()
		c.iopub.Close()
	})
	// The PUB socket drops what it sends before the subscription arrives:
	// send kernel_info until its status messages come through.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		id := c.send(c.shell, "kernel_info_request", map[string]any{}, c.sign)
		c.reply(c.shell, id)
		if _, ok := c.waitIdle(id, 300*time.Millisecond); ok {
			return k, c, done
		}
	}
	t.Fatal("no iopub messages from the kernel")
	return nil, nil, nil
}

// dial connects another DEALER to port (of a test kernel on tcp).
func (c *client) dial(port int) zmq4.Socket {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(kernel.NewID())))
	c.t.Cleanup(func() {
		s.Close()
		cancel()
	})
	if err := s.Dial("tcp://" + net.JoinHostPort("127.0.0.1", fmt.Sprint(port))); err != nil {
		c.t.Fatal(err)
	}
	return s
}

func (c *client) send(s zmq4.Socket, msgType string, content any, sg signer) string {
	c.t.Helper()
	m, err := newMessage(msgType, c.session, nil, content)
	if err != nil {
		c.t.Fatal(err)
	}
	frames, err := sg.encode(m)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := s.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
	return m.Header.MsgID
}

// reply waits for the reply to request id on s.
func (c *client) reply(s zmq4.Socket, id string) (*Message, map[string]any) {
	c.t.Helper()
	for {
		m := c.early[id]
		delete(c.early, id)
		if m == nil {
			zm, err := s.Recv()
			if err != nil {
				c.t.Fatal(err)
			}
			if m, err = c.sign.decode(zm.Frames); err != nil {
				c.t.Fatal(err)
			}
			var parent Header
			_ = json.Unmarshal(m.Parent, &parent)
			if parent.MsgID != id {
				if c.early == nil {
					c.early = map[string]*Message{}
				}
				c.early[parent.MsgID] = m
				continue
			}
		}
		var content map[string]any
		if err := json.Unmarshal(m.Content, &content); err != nil {
			c.t.Fatal(err)
		}
		return m, content
	}
}

// waitIdle returns the iopub messages of request id once its idle status
// has arrived.
func (c *client) waitIdle(id string, timeout time.Duration) ([]*Message, bool) {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		var mine []*Message
		idle := false
		for _, m := range c.pub {
			var parent Header
			_ = json.Unmarshal(m.Parent, &parent)
			if parent.MsgID == id {
				mine = append(mine, m)
				if m.Header.MsgType == "status" && strings.Contains(string(m.Content), `"idle"`) {
					idle = true
				}
			}
		}
		c.mu.Unlock()
		if idle {
			return mine, true
		}
		select {
		case <-c.pubCh:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return mine, false
		}
	}
}

// waitStarted waits until request id's cell has started: its
// execute_input has arrived on iopub.
func (c *client) waitStarted(id string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		started := false
		for _, m := range c.pub {
			var parent Header
			_ = json.Unmarshal(m.Parent, &parent)
			if parent.MsgID == id && m.Header.MsgType == "execute_input" {
				started = true
			}
		}
		c.mu.Unlock()
		if started {
			return true
		}
		select {
		case <-c.pubCh:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return false
		}
	}
}

func msgTypes(ms []*Message) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Header.MsgType)
	}
	return strings.Join(s, " ")
}

// TestKernelIPC runs the kernel on Unix sockets (transport "ipc", as
// jupyter_client's KernelManager(transport="ipc") asks).
func TestKernelIPC(t *testing.T) {
	dir, err := os.MkdirTemp("", "cbk") // short: Unix socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_, c, done := startKernelOn(t, &ConnectionInfo{Transport: "ipc", IP: filepath.Join(dir, "k"), ShellPort: 1, ControlPort: 2,
		IOPubPort: 3, StdinPort: 4, HBPort: 5, Key: "k", SignatureScheme: "hmac-sha256"})
	id := c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 2 AS two"}, c.sign)
	if _, r := c.reply(c.shell, id); r["status"] != "ok" {
		t.Fatalf("execute over ipc: %v", r)
	}
	id = c.send(c.control, "shutdown_request", map[string]any{}, c.sign)
	c.reply(c.control, id)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestKernelInProcess drives a kernel in this process (so the race
// detector sees its goroutines): execute, a failure, a wrongly signed
// message, an interrupt of a long cell, and shutdown.
func TestKernelInProcess(t *testing.T) {
	k, c, done := startKernel(t)

	id := c.send(c.shell, "execute_request", map[string]any{"code": "SELECT count(*) AS n FROM hits", "silent": false}, c.sign)
	_, rep := c.reply(c.shell, id)
	msgs, ok := c.waitIdle(id, 10*time.Second)
	if rep["status"] != "ok" || rep["execution_count"] != 1.0 || !ok {
		t.Fatalf("execute: reply %v, iopub %s", rep, msgTypes(msgs))
	}
	if got := msgTypes(msgs); !strings.HasPrefix(got, "status execute_input") || !strings.Contains(got, "execute_result") || !strings.HasSuffix(got, "status") {
		t.Errorf("iopub of an execution = %s", got)
	}
	for _, m := range msgs {
		if m.Header.MsgType == "execute_result" && !strings.Contains(string(m.Content), fmt.Sprint(gentest.Rows)) {
			t.Errorf("execute_result = %s", m.Content)
		}
	}

	// A %%sql magic: per-cell settings; a bad one is an error with its cause.
	id = c.send(c.shell, "execute_request", map[string]any{"code": "%%sql group_by=naive\nSELECT UserID, count(*) FROM hits GROUP BY UserID LIMIT 1"}, c.sign)
	if _, r := c.reply(c.shell, id); r["status"] != "ok" {
		t.Errorf("%%%%sql group_by=naive: %v", r)
	}
	id = c.send(c.shell, "execute_request", map[string]any{"code": "%%sql group_by=sideways\nSELECT 1"}, c.sign)
	if _, r := c.reply(c.shell, id); r["status"] != "error" || !strings.Contains(fmt.Sprint(r["evalue"]), "group_by") {
		t.Errorf("%%%%sql group_by=sideways: %v", r)
	}
	countBefore := 3

	// %%cachesim: the pattern on the next line, geometry on the magic line.
	id = c.send(c.shell, "execute_request", map[string]any{"code": "%%cachesim l1=32K\nrandom size=1M n=10000"}, c.sign)
	_, r := c.reply(c.shell, id)
	ms, _ := c.waitIdle(id, 10*time.Second)
	if r["status"] != "ok" || !strings.Contains(msgTypes(ms), "execute_result") {
		t.Errorf("%%%%cachesim: %v, iopub %s", r, msgTypes(ms))
	}
	countBefore++

	// A wrongly signed execute_request is dropped, and its connection
	// closed, as it is read: nothing runs.
	before := k.Dropped()
	bad := c.send(c.dial(k.cfg.Conn.ShellPort), "execute_request", map[string]any{"code": "SELECT 1"}, signer{key: []byte("other")})
	badCtl := c.send(c.dial(k.cfg.Conn.ControlPort), "shutdown_request", map[string]any{"restart": false}, signer{key: []byte("other")})
	id = c.send(c.shell, "execute_request", map[string]any{"code": "SELECT nosuch FROM hits"}, c.sign)
	_, rep = c.reply(c.shell, id)
	if rep["status"] != "error" || rep["ename"] != kernel.ErrSQL || rep["execution_count"] != float64(countBefore+1) {
		t.Errorf("failing cell reply = %v (the wrongly signed cell must not have counted)", rep)
	}
	// The control channel is read by its own goroutine: its message may
	// be dropped a moment after the shell's reply.
	for deadline := time.Now().Add(2 * time.Second); k.Dropped()-before < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := k.Dropped() - before; got != 2 {
		t.Errorf("dropped %d messages, want 2", got)
	}
	if ms, _ := c.waitIdle(bad, 200*time.Millisecond); len(ms) != 0 {
		t.Errorf("the wrongly signed message got output: %s", msgTypes(ms))
	}
	if ms, _ := c.waitIdle(badCtl, 10*time.Millisecond); len(ms) != 0 {
		t.Errorf("the wrongly signed shutdown got output: %s", msgTypes(ms))
	}

	// Interrupt a long cell on control.
	stmt := "SELECT regexp_replace(URL, '^https?://([^/]+)/.*$', '\\1') AS k, count(*) FROM hits GROUP BY k ORDER BY 2 DESC LIMIT 1;\n"
	id = c.send(c.shell, "execute_request", map[string]any{"code": strings.Repeat(stmt, 5000)}, c.sign)
	// Two cells queued behind it ("Run all"): the interrupt aborts them too.
	queued := []string{
		c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 1"}, c.sign),
		c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 2"}, c.sign),
	}
	// Interrupt it while it runs, not while it waits for its turn (on a
	// loaded machine that can take a while): an interrupt aborts a cell
	// that has not started.
	if !c.waitStarted(id, 30*time.Second) {
		t.Fatal("the long cell did not start within 30 s")
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	ctl := c.send(c.control, "interrupt_request", map[string]any{}, c.sign)
	if _, r := c.reply(c.control, ctl); r["status"] != "ok" {
		t.Errorf("interrupt_reply = %v", r)
	}
	_, rep = c.reply(c.shell, id)
	took := time.Since(start)
	t.Logf("interrupt → execute_reply: %v", took)
	if rep["ename"] != kernel.ErrInterrupted {
		t.Errorf("interrupted cell reply = %v", rep)
	}
	for _, q := range queued {
		if _, r := c.reply(c.shell, q); r["status"] != "aborted" {
			t.Errorf("cell queued behind the interrupted one: %v, want aborted", r)
		}
	}
	// The bound is on the kernel, not on a loaded machine's scheduler: up
	// to two more tries, each one logged.
	for try := 2; took > interruptBound && try <= 3; try++ {
		id = c.send(c.shell, "execute_request", map[string]any{"code": strings.Repeat(stmt, 5000)}, c.sign)
		c.waitStarted(id, 30*time.Second)
		time.Sleep(200 * time.Millisecond)
		start = time.Now()
		ctl = c.send(c.control, "interrupt_request", map[string]any{}, c.sign)
		c.reply(c.control, ctl)
		c.reply(c.shell, id)
		took = min(took, time.Since(start))
		t.Logf("try %d: interrupt → execute_reply: %v", try, time.Since(start))
	}
	if took > interruptBound {
		t.Errorf("interrupt took %v at best, want ≤ %v", took, interruptBound)
	}
	// The next cell runs again.
	id = c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 3 AS three"}, c.sign)
	if _, r := c.reply(c.shell, id); r["status"] != "ok" {
		t.Errorf("cell after the interrupt: %v", r)
	}

	// Completion through the socket, then shutdown.
	id = c.send(c.shell, "complete_request", map[string]any{"code": "SELECT Use", "cursor_pos": 10}, c.sign)
	if _, r := c.reply(c.shell, id); !strings.Contains(fmt.Sprint(r["matches"]), "UserID") {
		t.Errorf("complete_reply = %v", r)
	}
	id = c.send(c.control, "shutdown_request", map[string]any{"restart": true}, c.sign)
	if _, r := c.reply(c.control, id); r["restart"] != true {
		t.Errorf("shutdown_reply = %v", r)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the kernel did not stop after shutdown_request")
	}
}

// TestInterruptAbortsQueue: an interrupt aborts every execute request sent
// before it — those the kernel has queued and those still in the sockets'
// buffers — and a request sent after it runs.
func TestInterruptAbortsQueue(t *testing.T) {
	_, c, _ := startKernel(t)
	stmt := "SELECT regexp_replace(URL, '^https?://([^/]+)/.*$', '\\1') AS k, count(*) FROM hits GROUP BY k ORDER BY 2 DESC LIMIT 1;\n"
	long := c.send(c.shell, "execute_request", map[string]any{"code": strings.Repeat(stmt, 5000)}, c.sign)
	const n = 500
	queued := map[string]bool{}
	for range n {
		queued[c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 1", "stop_on_error": false}, c.sign)] = true
	}
	time.Sleep(200 * time.Millisecond)
	ctl := c.send(c.control, "interrupt_request", map[string]any{}, c.sign)
	c.reply(c.control, ctl)
	after := c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 2 AS two"}, c.sign)
	statuses := map[string]int{}
	for len(queued) > 0 || after != "" {
		zm, err := c.shell.Recv()
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.sign.decode(zm.Frames)
		if err != nil {
			t.Fatal(err)
		}
		var parent Header
		var r struct {
			Status, Ename string
		}
		_ = json.Unmarshal(m.Parent, &parent)
		_ = json.Unmarshal(m.Content, &r)
		switch {
		case parent.MsgID == long:
			if r.Ename != kernel.ErrInterrupted {
				t.Errorf("the running cell: %+v, want %s", r, kernel.ErrInterrupted)
			}
		case queued[parent.MsgID]:
			delete(queued, parent.MsgID)
			statuses[r.Status]++
		case parent.MsgID == after:
			after = ""
			if r.Status != "ok" {
				t.Errorf("the cell sent after the interrupt: %+v, want ok", r)
			}
		}
	}
	t.Logf("%d requests queued behind an interrupted cell: %v", n, statuses)
	if statuses["aborted"] != n {
		t.Errorf("replies to the queued requests: %v, want all %d aborted", statuses, n)
	}
}
