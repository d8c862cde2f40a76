package jupyter

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cachebook/kernel"
)

// ProtocolVersion is the version of the Jupyter messaging protocol the
// kernel speaks.
const ProtocolVersion = "5.3"

// delimiter separates the routing identities from the signed message.
var delimiter = []byte("<IDS|MSG>")

// Header is a Jupyter message header.
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// Message is one Jupyter message: the routing identities it came with (or
// is sent to), its header, the parent header, metadata, content and
// buffers. Parent is raw JSON so that a reply echoes the request's header
// exactly (clients match on it).
type Message struct {
	Identities [][]byte
	Header     Header
	Parent     json.RawMessage
	Metadata   json.RawMessage
	Content    json.RawMessage
	Buffers    [][]byte
	// rawHeader is the header as received, echoed as parent_header.
	rawHeader json.RawMessage
	// received is when the kernel read the message off its socket.
	received time.Time
}

// ErrSignature is wrapped by the error of a message whose signature does
// not match its parts.
var ErrSignature = errors.New("invalid message signature")

// signer signs and checks messages with the connection's key. An empty key
// means messages are not signed (Jupyter's convention).
type signer struct{ key []byte }

func (s signer) sign(parts ...[]byte) []byte {
	if len(s.key) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write(p)
	}
	sum := m.Sum(nil)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// verify checks a hex signature in constant time.
func (s signer) verify(sig []byte, parts ...[]byte) bool {
	if len(s.key) == 0 {
		return true
	}
	want := s.sign(parts...)
	return hmac.Equal(bytes.ToLower(sig), want)
}

// maxHeaderBytes bounds the JSON of a header: larger ones are refused
// before they are decoded.
const maxHeaderBytes = 4 << 10

// decode parses the frames of one incoming message and checks its
// signature. A message with a bad signature is refused with an error
// wrapping ErrSignature before any of it is decoded.
func (s signer) decode(frames [][]byte) (*Message, error) {
	i := 0
	for i < len(frames) && !bytes.Equal(frames[i], delimiter) {
		i++
	}
	if i == len(frames) {
		return nil, errors.New("jupyter: message has no <IDS|MSG> delimiter")
	}
	rest := frames[i+1:]
	if len(rest) < 5 {
		return nil, fmt.Errorf("jupyter: message has %d parts after the delimiter, want at least 5", len(rest))
	}
	sig, h, p, md, c := rest[0], rest[1], rest[2], rest[3], rest[4]
	if !s.verify(sig, h, p, md, c) {
		return nil, fmt.Errorf("jupyter: %w", ErrSignature)
	}
	if len(h) > maxHeaderBytes {
		return nil, fmt.Errorf("jupyter: header of %d bytes is larger than %d", len(h), maxHeaderBytes)
	}
	m := &Message{Identities: frames[:i], Parent: p, Metadata: md, Content: c, Buffers: rest[5:], rawHeader: h}
	if err := json.Unmarshal(h, &m.Header); err != nil {
		return nil, fmt.Errorf("jupyter: header: %w", err)
	}
	if m.Header.MsgType == "" {
		return nil, errors.New("jupyter: header has no msg_type")
	}
	return m, nil
}

// encode returns the frames of m, signed.
func (s signer) encode(m *Message) ([][]byte, error) {
	h, err := json.Marshal(m.Header)
	if err != nil {
		return nil, fmt.Errorf("jupyter: encode header: %w", err)
	}
	p, md, c := orEmpty(m.Parent), orEmpty(m.Metadata), orEmpty(m.Content)
	frames := make([][]byte, 0, len(m.Identities)+7+len(m.Buffers))
	for _, id := range m.Identities {
		frames = append(frames, id)
	}
	frames = append(frames, delimiter, s.sign(h, p, md, c), h, p, md, c)
	frames = append(frames, m.Buffers...)
	return frames, nil
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

// newMessage returns a message of msgType answering parent (nil: none) in
// kernel session session, with content marshalled from content.
func newMessage(msgType, session string, parent *Message, content any) (*Message, error) {
	c, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("jupyter: encode %s: %w", msgType, err)
	}
	m := &Message{
		Header: Header{
			MsgID:    kernel.NewID(),
			Session:  session,
			Username: "kernel",
			Date:     time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
			MsgType:  msgType,
			Version:  ProtocolVersion,
		},
		Parent:   json.RawMessage("{}"),
		Metadata: json.RawMessage("{}"),
		Content:  c,
	}
	if parent != nil && len(parent.rawHeader) > 0 {
		m.Parent = parent.rawHeader
	} else if parent != nil {
		if b, err := json.Marshal(parent.Header); err == nil {
			m.Parent = b
		}
	}
	return m, nil
}
