package jupyter

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func frames(s signer, ids [][]byte, h, p, md, c string) [][]byte {
	f := append([][]byte{}, ids...)
	f = append(f, delimiter, s.sign([]byte(h), []byte(p), []byte(md), []byte(c)), []byte(h), []byte(p), []byte(md), []byte(c))
	return f
}

func TestDecode(t *testing.T) {
	s := signer{key: []byte("secret")}
	h := `{"msg_id":"1","session":"s","username":"u","date":"","msg_type":"execute_request","version":"5.3"}`
	good := frames(s, [][]byte{[]byte("peer")}, h, "{}", "{}", `{"code":"SELECT 1"}`)
	tamper := func(i int, v string) [][]byte {
		f := append([][]byte{}, good...)
		f[i] = []byte(v)
		return f
	}
	other := frames(signer{key: []byte("wrong")}, nil, h, "{}", "{}", `{"code":"SELECT 1"}`)
	upper := append([][]byte{}, good...)
	upper[2] = bytes.ToUpper(upper[2])
	tests := []struct {
		name    string
		frames  [][]byte
		sigErr  bool
		wantErr bool
	}{
		{"good", good, false, false},
		{"hex in upper case", upper, false, false},
		{"other key", other, true, true},
		{"content changed", tamper(6, `{"code":"DROP"}`), true, true},
		{"header changed", tamper(3, `{"msg_type":"shutdown_request"}`), true, true},
		{"no signature", tamper(2, ""), true, true},
		{"no delimiter", [][]byte{[]byte("a"), []byte("b")}, false, true},
		{"too few parts", good[:5], false, true},
		{"bad header json", frames(s, nil, "{", "{}", "{}", "{}"), false, true},
		{"no msg_type", frames(s, nil, `{"msg_id":"1"}`, "{}", "{}", "{}"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := s.decode(tt.frames)
			if (err != nil) != tt.wantErr {
				t.Fatalf("decode: err = %v, want error %v", err, tt.wantErr)
			}
			if errors.Is(err, ErrSignature) != tt.sigErr {
				t.Fatalf("decode: err = %v, want ErrSignature %v", err, tt.sigErr)
			}
			if err == nil && (m.Header.MsgType != "execute_request" || string(m.Identities[0]) != "peer") {
				t.Fatalf("decode: %+v", m)
			}
		})
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, key := range []string{"k3y", ""} {
		s := signer{key: []byte(key)}
		req, err := s.decode(frames(s, [][]byte{[]byte("id1"), []byte("id2")},
			`{"msg_id":"r","session":"c","username":"u","date":"","msg_type":"kernel_info_request","version":"5.3","extra":1}`, "{}", "{}", "{}"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := newMessage("kernel_info_reply", "ks", req, map[string]string{"status": "ok"})
		if err != nil {
			t.Fatal(err)
		}
		m.Identities = req.Identities
		f, err := s.encode(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := s.decode(f)
		if err != nil {
			t.Fatalf("key %q: decode of our own message: %v", key, err)
		}
		var parent map[string]any
		if err := json.Unmarshal(back.Parent, &parent); err != nil || parent["msg_id"] != "r" || parent["extra"] != 1.0 {
			t.Fatalf("parent_header %s does not echo the request's header", back.Parent)
		}
		if len(back.Identities) != 2 || back.Header.Version != ProtocolVersion || back.Header.Session != "ks" {
			t.Fatalf("decoded %+v", back)
		}
		if key == "" && len(f[len(back.Identities)+1]) != 0 {
			t.Fatalf("unsigned messages must carry an empty signature")
		}
	}
}

func FuzzDecode(f *testing.F) {
	s := signer{key: []byte("k")}
	f.Add([]byte(`{"msg_type":"execute_request"}`), []byte(`{}`), []byte(`{"code":"x"}`), true)
	f.Add([]byte(`{`), []byte(`null`), []byte(``), false)
	f.Fuzz(func(t *testing.T, h, p, c []byte, sign bool) {
		fr := [][]byte{delimiter, []byte("00"), h, p, []byte("{}"), c}
		if sign {
			fr[1] = s.sign(h, p, []byte("{}"), c)
		}
		m, err := s.decode(fr)
		if !sign && err == nil {
			t.Fatal("an unsigned message was accepted")
		}
		if err == nil && m.Header.MsgType == "" {
			t.Fatal("accepted a message without msg_type")
		}
	})
}

func TestParseConnection(t *testing.T) {
	ok := `{"transport":"tcp","ip":"127.0.0.1","shell_port":1,"control_port":2,"iopub_port":3,"stdin_port":4,"hb_port":5,"key":"k","signature_scheme":"hmac-sha256"}`
	tests := []struct {
		name, json string
		wantErr    bool
	}{
		{"ok", ok, false},
		{"defaults", `{"ip":"::1","shell_port":1,"control_port":2,"iopub_port":3,"stdin_port":4,"hb_port":5}`, false},
		{"ipc", `{"transport":"ipc","ip":"/tmp/k"}`, false},
		{"udp", `{"transport":"udp","ip":"127.0.0.1"}`, true},
		{"md5", `{"ip":"127.0.0.1","signature_scheme":"hmac-md5","shell_port":1,"control_port":2,"iopub_port":3,"stdin_port":4,"hb_port":5}`, true},
		{"no ip", `{"shell_port":1,"control_port":2,"iopub_port":3,"stdin_port":4,"hb_port":5}`, true},
		{"port 0", `{"ip":"127.0.0.1","shell_port":0,"control_port":2,"iopub_port":3,"stdin_port":4,"hb_port":5}`, true},
		{"port too big", `{"ip":"127.0.0.1","shell_port":70000,"control_port":2,"iopub_port":3,"stdin_port":4,"hb_port":5}`, true},
		{"not json", `{`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConnection([]byte(tt.json))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && tt.name == "ok" && c.endpoint(c.ShellPort) != "tcp://127.0.0.1:1" {
				t.Fatalf("endpoint = %s", c.endpoint(c.ShellPort))
			}
			if err == nil && tt.name == "defaults" && c.endpoint(1) != "tcp://[::1]:1" {
				t.Fatalf("endpoint = %s", c.endpoint(1))
			}
			if err == nil && tt.name == "ipc" && c.endpoint(7) != "ipc:///tmp/k-7" {
				t.Fatalf("endpoint = %s", c.endpoint(7))
			}
		})
	}
}
