package web

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"cachebook/kernel"
)

// fillSessions runs one echo cell of size bytes in each of n teacher
// sessions ("r0"…) and disconnects, oldest first.
func fillSessions(t *testing.T, ts *testServer, n, size int) {
	t.Helper()
	code := strings.Repeat("x", size)
	for i := range n {
		c := ts.dial(t, fmt.Sprintf("r%d", i), 0)
		req := c.execute("echo", code)
		c.until(replyTo(req, kernel.MsgExecuteReply))
		c.conn.Close()
	}
}

// TestReplayCapDropsOldestDisconnected: the replay buffers of
// disconnected sessions together stay under the server's replay budget;
// the oldest session's frames go first, and its tab is told on
// reconnecting that it missed output, while the newest replays whole.
func TestReplayCapDropsOldestDisconnected(t *testing.T) {
	const size = 256 << 10
	ts := newTestServer(t, Config{Kernel: kernel.ManagerConfig{TotalBufferBytes: 2 << 20}})
	fillSessions(t, ts, 12, size) // ~6 MiB of output against a 2 MiB budget
	tests := []struct {
		session    string
		wantMissed bool
	}{
		{"r0", true},
		{"r5", true},
		{"r11", false},
	}
	for _, tt := range tests {
		var w kernel.Welcome
		waitFor(t, tt.session+"'s replay", func() bool {
			c := ts.dial(t, tt.session, 0)
			w = c.welcome
			c.conn.Close()
			return w.Missed == tt.wantMissed
		})
		if tt.wantMissed && w.LastSeq == 0 {
			t.Errorf("%s: welcome %+v", tt.session, w)
		}
	}
}

// TestReplayMemoryMeasure measures the heap held by n disconnected
// sessions of about 12 MiB of output each, with the default replay budget
// and with none (CACHEBOOK_MEASURE=N to run).
func TestReplayMemoryMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CACHEBOOK_MEASURE"))
	if n <= 0 {
		t.Skip("set CACHEBOOK_MEASURE=N to measure N disconnected sessions")
	}
	for _, budget := range []int{1 << 40, 0} {
		ts := newTestServer(t, Config{MaxMessageBytes: 16 << 20, MaxFrameBytes: 16 << 20,
			Kernel: kernel.ManagerConfig{TotalBufferBytes: budget}})
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fillSessions(t, ts, n, 6<<20)
		var after runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(&after)
		name := "default budget (256 MiB)"
		if budget > 0 {
			name = "no budget"
		}
		t.Logf("%d disconnected sessions, %s: heap %+.1f MiB (%.1f MiB each)", n, name,
			float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20),
			float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20)/float64(n))
		ts.Close(t.Context())
	}
}
