package jupyter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// MaxMessageBytes bounds one incoming ZeroMQ message (all its frames).
//
// go-zeromq/zmq4 allocates a frame's body at the size its header claims,
// before anything is checked, so a single header claiming a terabyte would
// abort the kernel with "fatal error: out of memory" before the signature
// could be checked. The kernel therefore listens through a transport whose
// connections parse the ZMTP framing as it is read and close a connection
// whose frame or message is larger than this, before zmq4 sees the header.
const MaxMessageBytes = 64 << 20

// Transport names of the limited transports (registered with zmq4 once).
const (
	transportTCP = "cachebook+tcp"
	transportIPC = "cachebook+ipc"
)

var registerOnce sync.Once

func registerTransports() {
	registerOnce.Do(func() {
		_ = zmq4.RegisterTransport(transportTCP, limitTransport{inner: transport.New("tcp"), network: "tcp", max: MaxMessageBytes})
		_ = zmq4.RegisterTransport(transportIPC, limitTransport{inner: transport.New("unix"), network: "unix", max: MaxMessageBytes})
	})
}

// limitTransport is a net transport whose connections enforce max.
type limitTransport struct {
	inner   transport.Transport
	network string
	max     int64
}

func (t limitTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := t.inner.Dial(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return newLimitConn(c, t.max), nil
}

func (t limitTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := t.inner.Listen(ctx, addr)
	if err != nil {
		return nil, err
	}
	return limitListener{l, t.max}, nil
}

func (t limitTransport) Addr(ep string) (string, error) { return t.inner.Addr(ep) }

type limitListener struct {
	net.Listener
	max int64
}

func (l limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newLimitConn(c, l.max), nil
}

// errTooLarge is returned by a limited connection's Read when the peer
// sends a frame or message over the limit; the connection is closed.
var errTooLarge = errors.New("jupyter: ZeroMQ message larger than the limit")

// zmtpGreeting is the length of the ZMTP 3 greeting that precedes frames.
const zmtpGreeting = 64

// limitConn tracks the ZMTP framing of what it reads: after the 64-byte
// greeting, every frame is a flags byte (bit 0: more frames follow, bit 1:
// 8-byte length), the length, and the body.
type limitConn struct {
	net.Conn
	max int64

	mu       sync.Mutex
	greet    int   // greeting bytes still to come
	body     int64 // body bytes of the current frame still to come
	inLen    int   // length bytes still to come (0: next byte is flags)
	size     int64 // length being read
	more     bool  // the current frame has the MORE flag
	total    int64 // bytes of the current message so far
	tooLarge bool
}

func newLimitConn(c net.Conn, max int64) *limitConn {
	return &limitConn{Conn: c, max: max, greet: zmtpGreeting}
}

func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tooLarge {
		return 0, errTooLarge
	}
	if e := c.scan(p[:n]); e != nil {
		c.tooLarge = true
		c.Conn.Close()
		return 0, e
	}
	return n, err
}

// scan follows the framing over b and fails when a frame or message is
// over the limit.
func (c *limitConn) scan(b []byte) error {
	for len(b) > 0 {
		switch {
		case c.greet > 0:
			k := min(c.greet, len(b))
			c.greet -= k
			b = b[k:]
		case c.body > 0:
			k := int(min(c.body, int64(len(b))))
			c.body -= int64(k)
			b = b[k:]
		case c.inLen == 0: // flags
			f := b[0]
			b = b[1:]
			c.more = f&1 != 0
			c.inLen, c.size = 1, 0
			if f&2 != 0 {
				c.inLen = 8
			}
		default:
			if c.size > c.max>>8 {
				return fmt.Errorf("%w: a frame header claims more than %d bytes", errTooLarge, c.max)
			}
			c.size = c.size<<8 | int64(b[0])
			b = b[1:]
			c.inLen--
			if c.inLen > 0 {
				continue
			}
			c.total += c.size
			if c.size > c.max || c.total > c.max {
				return fmt.Errorf("%w: %d bytes, limit %d", errTooLarge, c.total, c.max)
			}
			c.body = c.size
			if !c.more {
				c.total = 0
			}
		}
	}
	return nil
}
