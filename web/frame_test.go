package web

import (
	"strings"
	"testing"

	"cachebook/engine/gen/gentest"
	"cachebook/kernel"
)

// TestFrameCap runs cells whose results are small in values but huge as
// frames — a SELECT of many columns (each column's name and type), and
// many statements (each statement's echo and plan) — and wants every frame
// under the cap and an OutputTooLarge error on the cell instead of the
// result. A cell within the cap still gets its result.
func TestFrameCap(t *testing.T) {
	const capBytes = 1 << 20
	reg := testRunners()
	reg.Register(kernel.KindSQL, kernel.NewSQLRunner())
	ts := newTestServer(t, Config{MaxFrameBytes: capBytes,
		Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: reg, DataDir: gentest.HitsDir(t)}}})
	tests := []struct {
		name, code string
		tooLarge   bool
	}{
		{"many columns", "SELECT " + strings.Repeat("1,", 60000) + "1", true},
		// The parser takes at most 10,000 statements a cell; 9,000 of ten
		// columns each still make a frame of several MiB.
		{"many statements", strings.Repeat("SELECT 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;\n", 9000), true},
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
					if e.Ename == ErrOutputTooLarge && !strings.Contains(e.Evalue, "more than the 1MiB") {
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
