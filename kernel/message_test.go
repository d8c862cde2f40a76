package kernel

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		max    int
		reason string // "" = ok
	}{
		{"execute", `{"channel":"shell","header":{"msg_id":"a","msg_type":"execute_request","version":"cachebook-kernel/1"},"parent_header":{},"metadata":{},"content":{"code":"SELECT 1"}}`, 0, ""},
		{"no version, no content", `{"header":{"msg_id":"a","msg_type":"kernel_info_request"}}`, 0, ""},
		{"null content", `{"header":{"msg_type":"interrupt_request"},"content":null}`, 0, ""},
		{"minor version", `{"header":{"msg_type":"kernel_info_request","version":"cachebook-kernel/1.2"}}`, 0, ""},
		{"unknown fields ignored", `{"header":{"msg_type":"x_request","extra":1},"buffers":[],"zzz":true}`, 0, ""},
		{"not json", `hello`, 0, "json"},
		{"truncated", `{"header":{"msg_type":"a"`, 0, "json"},
		{"trailing", `{"header":{"msg_type":"a"}} {}`, 0, "json"},
		{"array", `[1,2]`, 0, "json"},
		{"no header", `{"content":{}}`, 0, "header"},
		{"empty type", `{"header":{"msg_type":""}}`, 0, "header"},
		{"odd type", `{"header":{"msg_type":"Exec Request"}}`, 0, "header"},
		{"long id", `{"header":{"msg_type":"a","msg_id":"` + strings.Repeat("x", 200) + `"}}`, 0, "header"},
		{"bad channel", `{"channel":"stdin2","header":{"msg_type":"a"}}`, 0, "header"},
		{"other version", `{"header":{"msg_type":"a","version":"5.3"}}`, 0, "version"},
		{"content string", `{"header":{"msg_type":"a"},"content":"x"}`, 0, "content"},
		{"too large", `{"header":{"msg_type":"a"}}`, 10, "too_large"},
		{"invalid utf8", "{\"header\":{\"msg_type\":\"a\"},\"content\":{\"code\":\"\xff\"}}", 0, "json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.in), tt.max)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if m.Header.MsgType == "" {
					t.Fatal("no msg_type")
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want DecodeError %s", err, tt.reason)
			}
			if de.Reason != tt.reason {
				t.Fatalf("reason = %s (%v), want %s", de.Reason, err, tt.reason)
			}
		})
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	req := NewMessage(ChannelShell, MsgExecuteRequest, "s1", Header{}, ExecuteRequest{Code: "SELECT 1", Kind: "sql", CellID: "c1"})
	m := NewMessage(ChannelIOPub, MsgStatus, "k", req.Header, Status{ExecutionState: StateBusy})
	m.Seq = 7
	data, err := Encode(&m)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"channel", "header", "parent_header", "metadata", "content", "seq"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("encoded message lacks %q: %s", k, data)
		}
	}
	got, err := Decode(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.ParentHeader.MsgID != req.Header.MsgID || got.Header.MsgType != MsgStatus {
		t.Fatalf("round trip: %+v", got)
	}
	var st Status
	if err := got.DecodeContent(&st); err != nil || st.ExecutionState != StateBusy {
		t.Fatalf("content: %+v %v", st, err)
	}
	// An empty parent header is {}.
	e := NewMessage(ChannelIOPub, MsgStatus, "k", Header{}, nil)
	data, _ = Encode(&e)
	if !strings.Contains(string(data), `"parent_header":{}`) || !strings.Contains(string(data), `"content":{}`) {
		t.Fatalf("empty parent/content: %s", data)
	}
	if id := NewID(); len(id) != 36 || id[14] != '4' {
		t.Fatalf("NewID = %s", id)
	}
}

// FuzzDecode checks that Decode never panics, and that whatever it accepts
// re-encodes to a frame it accepts again with the same header.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"channel":"shell","header":{"msg_id":"a","msg_type":"execute_request","version":"cachebook-kernel/1"},"parent_header":{},"metadata":{},"content":{"code":"SELECT 1"}}`))
	f.Add([]byte(`{"header":{"msg_type":"interrupt_request"},"content":null}`))
	f.Add([]byte(`{"header":{"msg_type":"a"},"content":"x"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"header":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, 1<<16)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a DecodeError: %v", err)
			}
			return
		}
		out, err := Encode(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := Decode(out, 0)
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if m2.Header != m.Header || m2.ParentHeader != m.ParentHeader {
			t.Fatalf("header changed: %+v vs %+v", m2.Header, m.Header)
		}
		var req ExecuteRequest
		_ = m.DecodeContent(&req) // must not panic
	})
}
