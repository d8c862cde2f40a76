package jupyter

import (
	"context"
	"slices"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/engine/gen/gentest"
	"cachebook/kernel"
)

func testKernel(t *testing.T, withData bool) *Kernel {
	t.Helper()
	xc := kernel.Config{}
	if withData {
		db, err := engine.Open(engine.Options{DataDir: gentest.HitsDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		xc.DB = db
	}
	k, err := New(Config{Conn: &ConnectionInfo{IP: "127.0.0.1"}, Executor: xc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.mgr.Close(context.Background()) })
	return k
}

func TestComplete(t *testing.T) {
	k := testKernel(t, true)
	tests := []struct {
		code       string
		cursor     int // -1: end
		want       string
		start, end int
	}{
		{"SELECT Us", -1, "UserID", 7, 9},
		{"SELECT count(*) FROM hi", -1, "hits", 21, 23},
		{"sel", -1, "SELECT", 0, 3},
		{"SELECT regexp", -1, "regexp_replace", 7, 13},
		{"SET gr", -1, "group_by", 4, 6},
		{"SET group_by = ", -1, "'radix'", 15, 15},
		{"SET group_by TO 'p", -1, "", 0, 0},
		{"set huge_pages = ", -1, "false", 17, 17},
		{"SET default_n", -1, "default_null_order", 4, 13}, // every setting of the engine's table
		{"SET counters = ", -1, "'model'", 15, 15},
		{"SET worker_threads = ", -1, "4", 21, 21}, // an alias
		{"%%la", -1, "%%latency", 0, 4},
		{"%%experiment fa", -1, "false-sharing", 13, 15},
		{"%%experiment false-sharing th", -1, "threads=", 27, 29},
		{"%%latency ma", -1, "max=", 10, 12},
		{"%%sql group", -1, "group_by=", 6, 11},
		{"SELECT h.Reg FROM hits h", 12, "h.RegionID", 7, 12},
		{"SELECT é, Us", -1, "UserID", 10, 12}, // cursor in code points
	}
	for _, tt := range tests {
		cur := tt.cursor
		if cur < 0 {
			cur = len([]rune(tt.code))
		}
		r := k.complete(context.Background(), tt.code, cur)
		m := r["matches"].([]string)
		if tt.want == "" {
			continue
		}
		if !slices.Contains(m, tt.want) {
			t.Errorf("complete(%q): %v lacks %q", tt.code, m, tt.want)
		}
		if r["cursor_start"] != tt.start || r["cursor_end"] != tt.end {
			t.Errorf("complete(%q): cursor %v..%v, want %d..%d", tt.code, r["cursor_start"], r["cursor_end"], tt.start, tt.end)
		}
	}
	// Without an engine, keywords and settings still complete.
	k0 := testKernel(t, false)
	if m := k0.complete(context.Background(), "SEL", 3)["matches"].([]string); !slices.Contains(m, "SELECT") {
		t.Errorf("no engine: %v", m)
	}
}

func TestInspect(t *testing.T) {
	k := testKernel(t, true)
	tests := []struct {
		code   string
		cursor int
		found  bool
		want   string
	}{
		{"SELECT * FROM hits", 16, true, "DESCRIBE hits: 25 columns"},
		{"SELECT count(*) FROM hits", 9, true, "count(*) | count(x)"},
		{"SET radix_bits = 8", 6, true, "Partitions = 2^radix_bits"},
		{"%%latency max=1M", 4, true, "Parameters: min, max"},
		{"%%experiment zeroing", 5, true, "Experiments:"},
		{"SELECT nosuch", 10, false, ""},
	}
	for _, tt := range tests {
		r := k.inspect(context.Background(), tt.code, tt.cursor)
		if r["found"] != tt.found {
			t.Errorf("inspect(%q, %d): found = %v", tt.code, tt.cursor, r["found"])
			continue
		}
		if tt.found {
			text := r["data"].(map[string]any)[MIMEText].(string)
			if !strings.Contains(text, tt.want) {
				t.Errorf("inspect(%q, %d) = %q, want %q", tt.code, tt.cursor, text, tt.want)
			}
		}
	}
}
