package jupyter

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net"
	"sync"
	"sync/atomic"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// DefaultMaxMessageBytes is the default bound on one incoming ZeroMQ
// message (all its frames); Config.MaxMessageBytes changes it.
//
// go-zeromq/zmq4 allocates a frame's body at the size its header claims,
// before anything is checked, and queues up to ten whole messages per
// socket before the kernel sees one. So the kernel listens through
// transports whose connections follow the ZMTP framing as it is read
// (limitConn) and close a connection, before zmq4 sees the offending
// header or completes the message:
//
//   - whose frame or message is larger than the limit (a header claiming
//     a terabyte would otherwise abort the process with "out of memory");
//   - on shell, control and stdin, whose message has a frame before the
//     signature that no well-formed message has (a routing identity over
//     255 bytes, a signature that is not 64 hex digits, a header over
//     4 KiB), or whose signature does not match: the HMAC is computed over
//     the frames as they arrive and checked when the content frame ends,
//     so a wrongly signed message never reaches zmq4's queue.
//
// What remains: zmq4 still allocates each frame of a message in full when
// its header arrives, so a connection holds at most one message of up to
// the limit before its signature is known.
const DefaultMaxMessageBytes = 64 << 20

// maxIdentityBytes bounds a ZeroMQ routing identity (ZMTP: 255 bytes).
const maxIdentityBytes = 255

// transportSeq numbers the transports registered with zmq4, whose registry
// of transport names is global: every kernel registers its own, carrying
// its limit and key.
var transportSeq atomic.Int64

// wireCheck is what a kernel's connections check as they read.
type wireCheck struct {
	max int64
	// key, when not nil, is the signing key to check every message's
	// signature with (an empty, non-nil key: messages are not signed).
	key []byte
	// refused is told why a connection was closed (nil: not told).
	refused func(err error)
}

// registerTransport registers a tcp and an ipc transport whose
// connections enforce w, and returns their names.
func registerTransport(w wireCheck) (tcp, ipc string, err error) {
	n := transportSeq.Add(1)
	tcp, ipc = fmt.Sprintf("cachebook%d+tcp", n), fmt.Sprintf("cachebook%d+ipc", n)
	if err := zmq4.RegisterTransport(tcp, limitTransport{inner: transport.New("tcp"), check: w}); err != nil {
		return "", "", fmt.Errorf("jupyter: register transport: %w", err)
	}
	if err := zmq4.RegisterTransport(ipc, limitTransport{inner: transport.New("unix"), check: w}); err != nil {
		return "", "", fmt.Errorf("jupyter: register transport: %w", err)
	}
	return tcp, ipc, nil
}

// limitTransport is a net transport whose connections enforce check.
type limitTransport struct {
	inner transport.Transport
	check wireCheck
}

func (t limitTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := t.inner.Dial(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return newCheckedConn(c, t.check), nil
}

func (t limitTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := t.inner.Listen(ctx, addr)
	if err != nil {
		return nil, err
	}
	return limitListener{l, t.check}, nil
}

func (t limitTransport) Addr(ep string) (string, error) { return t.inner.Addr(ep) }

type limitListener struct {
	net.Listener
	check wireCheck
}

func (l limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newCheckedConn(c, l.check), nil
}

// errTooLarge is returned by a limited connection's Read when the peer
// sends a frame or message over the limit; the connection is closed.
var errTooLarge = errors.New("jupyter: ZeroMQ message larger than the limit")

// zmtpGreeting is the length of the ZMTP 3 greeting that precedes frames.
const zmtpGreeting = 64

// limitConn tracks the ZMTP framing of what it reads: after the 64-byte
// greeting, every frame is a flags byte (bit 0: more frames follow, bit 1:
// 8-byte length, bit 2: a command), the length, and the body. It refuses
// frames and messages over max and, with a verifier, wrongly signed
// messages.
type limitConn struct {
	net.Conn
	max     int64
	v       *verifier // nil: sizes only
	refused func(error)

	mu    sync.Mutex
	greet int   // greeting bytes still to come
	body  int64 // body bytes of the current frame still to come
	inLen int   // length bytes still to come (0: next byte is flags)
	size  int64 // length being read
	more  bool  // the current frame has the MORE flag
	cmd   bool  // the current frame is a command
	total int64 // bytes of the current message so far
	err   error // why the connection was refused
}

func newLimitConn(c net.Conn, max int64) *limitConn {
	return &limitConn{Conn: c, max: max, greet: zmtpGreeting}
}

func newCheckedConn(c net.Conn, w wireCheck) *limitConn {
	l := newLimitConn(c, w.max)
	l.refused = w.refused
	if w.key != nil {
		l.v = &verifier{key: w.key}
	}
	return l
}

func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if e := c.scan(p[:n]); e != nil {
		c.err = e
		c.Conn.Close()
		if c.refused != nil {
			c.refused(e)
		}
		return 0, e
	}
	return n, err
}

// scan follows the framing over b and fails when a frame or message is
// over the limit, or the verifier refuses a message.
func (c *limitConn) scan(b []byte) error {
	for len(b) > 0 {
		switch {
		case c.greet > 0:
			k := min(c.greet, len(b))
			c.greet -= k
			b = b[k:]
		case c.body > 0:
			k := int(min(c.body, int64(len(b))))
			if err := c.data(b[:k]); err != nil {
				return err
			}
			c.body -= int64(k)
			b = b[k:]
			if c.body == 0 {
				if err := c.end(); err != nil {
					return err
				}
			}
		case c.inLen == 0: // flags
			f := b[0]
			b = b[1:]
			c.more, c.cmd = f&1 != 0, f&4 != 0
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
			if c.v != nil && !c.cmd {
				if err := c.v.start(c.size); err != nil {
					return err
				}
			}
			if c.size == 0 {
				if err := c.end(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// data passes body bytes of the current frame to the verifier.
func (c *limitConn) data(b []byte) error {
	if c.v != nil && !c.cmd {
		c.v.data(b)
	}
	return nil
}

// end ends the current frame (and the message, without MORE).
func (c *limitConn) end() error {
	if !c.more {
		c.total = 0
	}
	if c.v == nil || c.cmd {
		return nil
	}
	return c.v.end(c.more)
}

// verifier follows the frames of the Jupyter messages on a connection —
// routing identities, <IDS|MSG>, the signature, then header, parent
// header, metadata and content, which the signature covers, then buffers —
// and checks each message's signature as its content frame ends.
type verifier struct {
	key   []byte
	part  int    // the part of the message the current frame is
	frame []byte // the current frame, while it is a delimiter candidate or the signature
	keep  bool   // frame is being collected
	sig   []byte // the message's signature (hex)
	mac   hash.Hash
}

// The parts of a message, in order.
const (
	partRouting = iota // identities, up to the delimiter
	partSignature
	partHeader
	partParent
	partMetadata
	partContent
	partBuffers
)

func (v *verifier) start(size int64) error {
	v.frame, v.keep = v.frame[:0], false
	switch v.part {
	case partRouting:
		if size > maxIdentityBytes {
			return fmt.Errorf("jupyter: refused a message: a %d-byte frame before <IDS|MSG> (routing identities are at most %d)", size, maxIdentityBytes)
		}
		v.keep = size == int64(len(delimiter))
	case partSignature:
		if len(v.key) > 0 && size != 2*sha256.Size {
			return fmt.Errorf("jupyter: %w: %d bytes, want %d hex digits", ErrSignature, size, 2*sha256.Size)
		}
		v.keep = true
	case partHeader:
		if size > maxHeaderBytes {
			return fmt.Errorf("jupyter: refused a message: header of %d bytes is larger than %d", size, maxHeaderBytes)
		}
	}
	return nil
}

func (v *verifier) data(b []byte) {
	switch {
	case v.keep:
		v.frame = append(v.frame, b...)
	case v.part >= partHeader && v.part <= partContent && v.mac != nil:
		v.mac.Write(b)
	}
}

func (v *verifier) end(more bool) error {
	var err error
	switch v.part {
	case partRouting:
		if v.keep && bytes.Equal(v.frame, delimiter) {
			v.part = partSignature
		}
	case partSignature:
		v.sig = append(v.sig[:0], v.frame...)
		v.mac = nil
		if len(v.key) > 0 {
			v.mac = hmac.New(sha256.New, v.key)
		}
		v.part = partHeader
	case partHeader, partParent, partMetadata:
		v.part++
	case partContent:
		if v.mac != nil {
			want := make([]byte, 2*sha256.Size)
			hex.Encode(want, v.mac.Sum(nil))
			if !hmac.Equal(bytes.ToLower(v.sig), want) {
				err = fmt.Errorf("jupyter: %w", ErrSignature)
			}
		}
		v.part = partBuffers
	}
	if !more {
		// The message ends: a short one is left to decode to refuse.
		v.part, v.mac = partRouting, nil
	}
	return err
}
