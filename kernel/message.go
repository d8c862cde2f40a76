package kernel

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Protocol is the name and version of the wire protocol (docs/protocol.md).
const Protocol = "cachebook-kernel/1"

// Channels a message travels on.
const (
	ChannelShell   = "shell"
	ChannelIOPub   = "iopub"
	ChannelControl = "control"
)

// Message types of the protocol.
const (
	MsgKernelInfoRequest   = "kernel_info_request"
	MsgKernelInfoReply     = "kernel_info_reply"
	MsgExecuteRequest      = "execute_request"
	MsgExecuteReply        = "execute_reply"
	MsgExecuteInput        = "execute_input"
	MsgExecuteResult       = "execute_result"
	MsgStatus              = "status"
	MsgStream              = "stream"
	MsgDisplayData         = "display_data"
	MsgUpdateDisplayData   = "update_display_data"
	MsgError               = "error"
	MsgInterruptRequest    = "interrupt_request"
	MsgInterruptReply      = "interrupt_reply"
	MsgShutdownRequest     = "shutdown_request"
	MsgShutdownReply       = "shutdown_reply"
	MsgWelcome             = "welcome"
	MsgProtocolError       = "protocol_error"
	MsgLessonListRequest   = "lesson_list_request"
	MsgLessonListReply     = "lesson_list_reply"
	MsgLessonOpenRequest   = "lesson_open_request"
	MsgLessonOpenReply     = "lesson_open_reply"
	MsgNotebookListRequest = "notebook_list_request"
	MsgNotebookListReply   = "notebook_list_reply"
	MsgNotebookOpenRequest = "notebook_open_request"
	MsgNotebookOpenReply   = "notebook_open_reply"
	MsgNotebookSaveRequest = "notebook_save_request"
	MsgNotebookSaveReply   = "notebook_save_reply"
)

// Execution states carried by status messages.
const (
	StateStarting = "starting"
	StateQueued   = "queued"
	StateBusy     = "busy"
	StateIdle     = "idle"
)

// Header identifies a message. The zero Header encodes as {} (the empty
// parent_header of a message that answers nothing).
type Header struct {
	MsgID    string `json:"msg_id,omitempty"`
	Session  string `json:"session,omitempty"`
	Username string `json:"username,omitempty"`
	MsgType  string `json:"msg_type,omitempty"`
	Version  string `json:"version,omitempty"`
	Date     string `json:"date,omitempty"`
}

// Message is one protocol frame. Content holds a typed content struct
// (ExecuteRequest, Status, ...) for messages built in Go and a
// json.RawMessage for decoded messages; DecodeContent handles both.
type Message struct {
	Channel      string         `json:"channel"`
	Header       Header         `json:"header"`
	ParentHeader Header         `json:"parent_header"`
	Metadata     map[string]any `json:"metadata"`
	Content      any            `json:"content"`
	// Seq is the per-session sequence number of a broadcast message
	// (0: not numbered).
	Seq uint64 `json:"seq,omitempty"`
}

// NewID returns a random UUID (version 4) as text.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// NewMessage returns a message of type msgType on channel with a fresh
// header dated now, answering parent (which may be the zero Header).
func NewMessage(channel, msgType, session string, parent Header, content any) Message {
	return Message{
		Channel: channel,
		Header: Header{
			MsgID:   NewID(),
			Session: session,
			MsgType: msgType,
			Version: Protocol,
			Date:    time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		},
		ParentHeader: parent,
		Content:      content,
	}
}

// Encode returns the JSON text frame of m. A nil Metadata or Content is
// written as {}.
func Encode(m *Message) ([]byte, error) {
	w := *m
	if w.Metadata == nil {
		w.Metadata = map[string]any{}
	}
	if w.Content == nil {
		w.Content = struct{}{}
	}
	b, err := json.Marshal(&w)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.Header.MsgType, err)
	}
	return b, nil
}

// DecodeError is the reason a frame was refused by Decode.
type DecodeError struct {
	Reason string // short machine-readable reason: "too_large", "json", "header", "version", "content"
	Msg    string
}

func (e *DecodeError) Error() string { return e.Msg }

// Limits of decoded header fields.
const (
	maxIDLen   = 128
	maxTypeLen = 64
)

// Decode parses one client frame of at most maxBytes bytes (0: no limit).
// It checks the envelope (a JSON object with a header naming a message
// type, a known channel and, if given, our protocol major version) and
// keeps Content as a json.RawMessage. Unknown fields are ignored; seq is
// kept (it is meaningful in server frames only). The
// returned error is a *DecodeError.
func Decode(data []byte, maxBytes int) (*Message, error) {
	if maxBytes > 0 && len(data) > maxBytes {
		return nil, &DecodeError{"too_large", fmt.Sprintf("message of %d bytes exceeds the limit of %d", len(data), maxBytes)}
	}
	if !utf8.Valid(data) {
		return nil, &DecodeError{"json", "invalid JSON: not UTF-8"}
	}
	var w struct {
		Channel      string          `json:"channel"`
		Header       *Header         `json:"header"`
		ParentHeader *Header         `json:"parent_header"`
		Metadata     map[string]any  `json:"metadata"`
		Content      json.RawMessage `json:"content"`
		Seq          uint64          `json:"seq"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&w); err != nil {
		return nil, &DecodeError{"json", "invalid JSON: " + err.Error()}
	}
	if d.More() {
		return nil, &DecodeError{"json", "invalid JSON: trailing data after the message"}
	}
	if w.Header == nil {
		return nil, &DecodeError{"header", "message has no header"}
	}
	h := *w.Header
	switch {
	case h.MsgType == "":
		return nil, &DecodeError{"header", "header.msg_type is missing"}
	case len(h.MsgType) > maxTypeLen || !isToken(h.MsgType):
		return nil, &DecodeError{"header", "header.msg_type is not a message type name"}
	case len(h.MsgID) > maxIDLen || len(h.Session) > maxIDLen || len(h.Username) > maxIDLen || len(h.Date) > maxIDLen:
		return nil, &DecodeError{"header", "a header field is longer than 128 bytes"}
	case h.Version != "" && h.Version != Protocol && !strings.HasPrefix(h.Version, Protocol+"."):
		return nil, &DecodeError{"version", fmt.Sprintf("protocol version %q is not supported (want %s)", h.Version, Protocol)}
	}
	switch w.Channel {
	case "", ChannelShell, ChannelControl, ChannelIOPub:
	default:
		return nil, &DecodeError{"header", fmt.Sprintf("unknown channel %q", w.Channel)}
	}
	c := bytes.TrimSpace(w.Content)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		c = []byte("{}")
	}
	if c[0] != '{' {
		return nil, &DecodeError{"content", "content is not a JSON object"}
	}
	m := &Message{Channel: w.Channel, Header: h, Metadata: w.Metadata, Content: json.RawMessage(c), Seq: w.Seq}
	if w.ParentHeader != nil {
		m.ParentHeader = *w.ParentHeader
	}
	return m, nil
}

// isToken reports whether s is made of lowercase letters, digits and '_'.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// DecodeContent decodes m.Content into v. Content may be a json.RawMessage
// (decoded frames), a []byte, or a Go value (which is re-marshalled).
func (m *Message) DecodeContent(v any) error {
	var raw []byte
	switch c := m.Content.(type) {
	case nil:
		raw = []byte("{}")
	case json.RawMessage:
		raw = c
	case []byte:
		raw = c
	default:
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("%s content: %w", m.Header.MsgType, err)
		}
		raw = b
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s content: %w", m.Header.MsgType, err)
	}
	return nil
}
