package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cachebook/kernel"
)

// TestFrameCap runs cells whose results are small in values but huge as
// frames — a SELECT of many columns (each column's name and type), and
// many statements (each statement's echo and plan) — and wants every frame
// under the cap and an OutputTooLarge error on the cell instead of the
// result. A cell within the cap still gets its result.
func TestFrameCap(t *testing.T) {
	const capBytes = 256 << 10
	reg := testRunners()
	reg.Register(kernel.KindSQL, kernel.NewSQLRunner())
	ts := newTestServer(t, Config{MaxFrameBytes: capBytes,
		Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: reg, DB: hitsDB(t)}}})
	tests := []struct {
		name, code string
		tooLarge   bool
	}{
		// Sizes stay small enough for the race detector, and still
		// several times the 256 KiB cap.
		{"many columns", "SELECT " + strings.Repeat("1,", 12000) + "1", true},
		{"many statements", strings.Repeat("SELECT 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;\n", 1500), true},
		{"small", "SELECT 1, 2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial(t, "", 0)
			ex := c.execute(kernel.KindSQL, tt.code)
			ms := c.until(replyTo(ex, kernel.MsgExecuteReply))
			var ename string
			var result bool
			for _, m := range ms {
				switch m.Header.MsgType {
				case kernel.MsgError:
					var e kernel.ErrorContent
					_ = m.DecodeContent(&e)
					ename = e.Ename
					if e.Ename == ErrOutputTooLarge {
						t.Logf("%s", e.Evalue)
					}
					if e.Ename == ErrOutputTooLarge && !strings.Contains(e.Evalue, "more than the 256KiB") {
						t.Errorf("error text %q does not name the cap", e.Evalue)
					}
					if m.Seq == 0 || m.ParentHeader.MsgID != ex.Header.MsgID {
						t.Errorf("replacement error lost its seq or parent: %d %q", m.Seq, m.ParentHeader.MsgID)
					}
				case kernel.MsgExecuteResult:
					result = true
				}
			}
			if got := c.largest.Load(); got > capBytes {
				t.Errorf("a %d-byte frame was sent, more than the %d-byte cap", got, capBytes)
			}
			if tt.tooLarge && (ename != ErrOutputTooLarge || result) {
				t.Errorf("error %q, result sent %v; want OutputTooLarge and no result", ename, result)
			}
			if !tt.tooLarge && (ename != "" || !result) {
				t.Errorf("error %q, result sent %v; want the result", ename, result)
			}
			t.Logf("%s: largest frame %d bytes", tt.name, c.largest.Load())
			// The replay to a tab that reconnects is capped too.
			r := ts.dial(t, c.welcome.Session, 0)
			r.until(replyTo(ex, kernel.MsgExecuteReply))
			if got := r.largest.Load(); got > capBytes {
				t.Errorf("replay sent a %d-byte frame", got)
			}
		})
	}
}

// TestFrameCapReply opens a notebook whose reply is larger than the frame
// cap: the reply comes back failed (OutputTooLarge), not as an output the
// request would wait on for ever.
func TestFrameCapReply(t *testing.T) {
	dir := t.TempDir()
	big := "# big\n\n" + strings.Repeat("prose that makes the notebook large. ", 12000) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "big.md"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, Config{MaxFrameBytes: 256 << 10, Notebooks: &NotebookDir{Root: dir}})
	c := ts.dial(t, "", 0)
	req := c.send(kernel.ChannelShell, kernel.MsgNotebookOpenRequest, map[string]string{"path": "big.md"})
	ms := c.until(func(m *kernel.Message) bool { return m.ParentHeader.MsgID == req.Header.MsgID })
	last := ms[len(ms)-1]
	var v map[string]any
	_ = last.DecodeContent(&v)
	if last.Header.MsgType != kernel.MsgNotebookOpenReply || v["status"] != kernel.StatusError || v["ename"] != ErrOutputTooLarge {
		t.Fatalf("reply %s %v", last.Header.MsgType, v)
	}
}
