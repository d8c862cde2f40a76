package jupyter

import (
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
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
