package jupyter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

func greeting() []byte {
	g := make([]byte, zmtpGreeting)
	g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 0
	copy(g[12:], "NULL")
	return g
}

func frame(flags byte, size int64) []byte {
	if size < 256 && flags&2 == 0 {
		return append([]byte{flags, byte(size)}, make([]byte, size)...)
	}
	b := make([]byte, 9)
	b[0] = flags | 2
	binary.BigEndian.PutUint64(b[1:], uint64(size))
	return b // the body is not needed: the header alone must be refused
}

func TestLimitConnScan(t *testing.T) {
	const max = 1000
	long := func(more bool, size int64) []byte {
		f := byte(2)
		if more {
			f |= 1
		}
		b := make([]byte, 9)
		b[0] = f
		binary.BigEndian.PutUint64(b[1:], uint64(size))
		return append(b, make([]byte, size)...)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"greeting only", greeting(), true},
		{"small frames", cat(greeting(), frame(4, 20), frame(1, 10), frame(0, 0)), true},
		{"frame at the limit", cat(greeting(), long(false, max)), true},
		{"frame over the limit", cat(greeting(), long(false, max+1)), false},
		{"terabyte header", cat(greeting(), frame(2, 1<<40)), false},
		{"max uint64 header", cat(greeting(), []byte{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), false},
		{"message over the limit", cat(greeting(), long(true, 600), long(false, 600)), false},
		{"messages under the limit each", cat(greeting(), long(false, 600), long(false, 600)), true},
	}
	for _, tt := range tests {
		// Feed the bytes in every chunk size, so headers split across reads.
		for _, chunk := range []int{1, 3, 64, 1 << 20} {
			c := newLimitConn(nil, max)
			var err error
			for b := tt.data; len(b) > 0 && err == nil; {
				k := min(chunk, len(b))
				err = c.scan(b[:k])
				b = b[k:]
			}
			if (err == nil) != tt.ok {
				t.Errorf("%s, chunks of %d: err = %v, want ok %v", tt.name, chunk, err, tt.ok)
			}
			if err != nil && !errors.Is(err, errTooLarge) {
				t.Errorf("%s: err = %v, want errTooLarge", tt.name, err)
			}
		}
	}
}

// TestHugeFrameHeader sends a frame header claiming a terabyte to the
// shell port: the connection is closed and the kernel keeps serving
// (without the limit zmq4 would try to allocate it and abort the process).
func TestHugeFrameHeader(t *testing.T) {
	k, c, _ := startKernel(t)
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(k.cfg.Conn.ShellPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(append(greeting(), frame(2|4, 1<<40)...)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the kernel did not close the connection")
			}
			break // closed by the kernel
		}
	}
	id := c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 1 AS one"}, c.sign)
	if _, rep := c.reply(c.shell, id); rep["status"] != "ok" {
		t.Fatalf("after the huge header: %v", rep)
	}
}

// zmtp encodes one message's frames as ZMTP frames (no greeting).
func zmtp(frames ...[]byte) []byte {
	var b []byte
	for i, f := range frames {
		flags := byte(0)
		if i < len(frames)-1 {
			flags = 1
		}
		if len(f) > 255 {
			h := make([]byte, 9)
			h[0] = flags | 2
			binary.BigEndian.PutUint64(h[1:], uint64(len(f)))
			b = append(b, h...)
		} else {
			b = append(b, flags, byte(len(f)))
		}
		b = append(b, f...)
	}
	return b
}

// TestLimitConnVerify: a checked connection refuses a wrongly signed
// message when its content frame ends, and malformed frames before the
// signature as soon as their header arrives.
func TestLimitConnVerify(t *testing.T) {
	key := []byte("the-key")
	good, bad := signer{key: key}, signer{key: []byte("other")}
	msg := func(s signer, ids [][]byte, content string) [][]byte {
		m := &Message{Identities: ids, Header: Header{MsgID: "1", MsgType: "execute_request"}, Content: []byte(content)}
		f, err := s.encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	big := `{"code": "` + strings.Repeat("x", 5000) + `"}`
	cat := func(parts ...[]byte) []byte {
		b := greeting()
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	ready := []byte{4, 6, 5, 'R', 'E', 'A', 'D', 'Y'} // a command frame
	withSig := func(sig []byte) [][]byte {
		f := msg(good, nil, "{}")
		f[1] = sig
		return f
	}
	tests := []struct {
		name string
		key  []byte
		data []byte
		want error // nil: accepted
	}{
		{"signed", key, cat(ready, zmtp(msg(good, nil, big)...)), nil},
		{"signed with identities and buffers", key, cat(zmtp(append(msg(good, [][]byte{[]byte("id1"), []byte("id2")}, "{}"), []byte("buf"))...)), nil},
		{"two signed", key, cat(zmtp(msg(good, nil, "{}")...), zmtp(msg(good, nil, big)...)), nil},
		{"wrong key", key, cat(zmtp(msg(bad, nil, big)...)), ErrSignature},
		{"signed, then wrong key", key, cat(zmtp(msg(good, nil, "{}")...), zmtp(msg(bad, nil, "{}")...)), ErrSignature},
		{"uppercase hex", key, cat(zmtp(withSig(bytes.ToUpper(msg(good, nil, "{}")[1]))...)), nil},
		{"empty signature", key, cat(zmtp(withSig(nil)...)), ErrSignature},
		{"unsigned kernel", []byte{}, cat(zmtp(msg(signer{}, nil, big)...)), nil},
		{"huge identity", key, cat(zmtp(append([][]byte{make([]byte, 300)}, msg(good, nil, "{}")...)...)), errRefused},
		{"huge header", key, cat(zmtp(delimiter, msg(good, nil, "{}")[1], make([]byte, maxHeaderBytes+1), []byte("{}"), []byte("{}"), []byte("{}"))), errRefused},
		{"no delimiter", key, cat(zmtp([]byte("a"), []byte("b"))), nil}, // small: decode refuses it
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 7, 1 << 20} {
			c := newCheckedConn(nil, wireCheck{max: 1 << 20, key: tt.key})
			var err error
			for b := tt.data; len(b) > 0 && err == nil; {
				k := min(chunk, len(b))
				err = c.scan(b[:k])
				b = b[k:]
			}
			switch {
			case tt.want == nil && err != nil:
				t.Errorf("%s, chunks of %d: refused: %v", tt.name, chunk, err)
			case tt.want == errRefused && err == nil, tt.want != nil && tt.want != errRefused && !errors.Is(err, tt.want):
				t.Errorf("%s, chunks of %d: err = %v, want %v", tt.name, chunk, err, tt.want)
			}
		}
	}
}

// errRefused stands for any refusal in TestLimitConnVerify.
var errRefused = errors.New("refused")

// TestMaxMessageBytes: a kernel with a smaller limit closes the connection
// of a signed message over it, and keeps serving the others.
func TestMaxMessageBytes(t *testing.T) {
	p := freePorts(t, 5)
	k, c, _ := startKernelWith(t, Config{MaxMessageBytes: 64 << 10, Conn: &ConnectionInfo{Transport: "tcp", IP: "127.0.0.1",
		ShellPort: p[0], ControlPort: p[1], IOPubPort: p[2], StdinPort: p[3], HBPort: p[4], Key: "k", SignatureScheme: "hmac-sha256"}})
	// The kernel may close the connection while the message is written:
	// the send's error is expected.
	m, err := newMessage("execute_request", c.session, nil, map[string]any{"code": "SELECT 1 -- " + strings.Repeat("x", 100<<10)})
	if err != nil {
		t.Fatal(err)
	}
	frames, err := c.sign.encode(m)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.dial(k.cfg.Conn.ShellPort).Send(zmq4.NewMsgFrom(frames...))
	big := m.Header.MsgID
	id := c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 1 -- " + strings.Repeat("x", 10<<10)}, c.sign)
	if _, rep := c.reply(c.shell, id); rep["status"] != "ok" {
		t.Fatalf("a message under the limit: %v", rep)
	}
	if ms, _ := c.waitIdle(big, 200*time.Millisecond); len(ms) != 0 {
		t.Errorf("the message over the limit got output: %s", msgTypes(ms))
	}
	// Only the small cells counted.
	id = c.send(c.shell, "execute_request", map[string]any{"code": "SELECT 2"}, c.sign)
	if _, rep := c.reply(c.shell, id); rep["execution_count"] != 2.0 {
		t.Errorf("the next cell: %v, want execution_count 2", rep)
	}
}
