package kernel

import (
	"errors"
	"strings"
	"testing"

	"cachebook/kernel/latency"
	"cachebook/kernel/param"
	"cachebook/kernel/sweep"
)

var browserLimits = Limits{Threads: 1, CellMemory: 512 << 20, Browser: true}

// oneThreadServer is a server limited to one thread and the browser's
// memory: it runs SET threads = N on one thread, and is no browser.
var oneThreadServer = Limits{Threads: 1, CellMemory: 512 << 20}

// TestOneThreadSQL checks that a one-thread runtime runs SET threads = N
// cells on one thread, keeping the source's positions, and says so.
func TestOneThreadSQL(t *testing.T) {
	tests := []struct {
		name, src string
		attrs     map[string]string
		lim       Limits
		want      string // the source run
		note      string // in the note; "" for none
	}{
		{"lesson 4", "RESET ALL;\nSET group_by = 'parallel';\nSET threads = 2;\nSELECT 1", nil, browserLimits,
			"RESET ALL;\nSET group_by = 'parallel';\nSET threads = 1;\nSELECT 1", "threads = 2"},
		{"quoted, TO, two digits", "set worker_threads TO '16'; select 1", nil, browserLimits,
			"set worker_threads TO '1 '; select 1", "threads = 16"},
		{"one already", "SET threads = 1; SELECT 1", nil, browserLimits, "SET threads = 1; SELECT 1", ""},
		{"attribute", "SELECT 1", map[string]string{"threads": "2"}, browserLimits, "SELECT 1", "threads = 2"},
		{"server", "SET threads = 2; SELECT 1", nil, Limits{}, "SET threads = 2; SELECT 1", ""},
		{"one-thread server", "SET threads = 2; SELECT 1", nil, oneThreadServer, "SET threads = 1; SELECT 1", "this server runs a cell on one thread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cell := Cell{Kind: KindSQL, Source: tt.src, Attrs: tt.attrs}
			got, note := oneThreadSQL(cell, tt.lim)
			if got.Source != tt.want {
				t.Errorf("source %q, want %q", got.Source, tt.want)
			}
			if len(got.Source) != len(tt.src) {
				t.Errorf("source length %d, want %d (positions kept)", len(got.Source), len(tt.src))
			}
			if tt.note == "" && note != "" || !strings.Contains(note, tt.note) {
				t.Errorf("note %q, want one containing %q", note, tt.note)
			}
			if !tt.lim.Browser && strings.Contains(note, "browser") {
				t.Errorf("note %q names the browser on a server", note)
			}
			if tt.attrs != nil && tt.note != "" && got.Attrs["threads"] != "1" {
				t.Errorf("threads attribute %q, want 1", got.Attrs["threads"])
			}
			if tt.attrs != nil && tt.attrs["threads"] != "2" {
				t.Error("the cell's own attributes were changed")
			}
		})
	}
}

// TestSweepVariant checks that lesson 3's sweep fits the browser's cell
// memory, its group counts capped at its rows, and that the server runs
// it as written.
func TestSweepVariant(t *testing.T) {
	cell := Cell{Kind: KindSweep, Attrs: map[string]string{"rows": "4000000", "groups": "1e3,1e4,1e5,1e6,4e6", "reps": "1"}}
	got, note, err := sweepVariant(cell, browserLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attrs["rows"] != "3500000" || got.Attrs["groups"] != "1000,10000,100000,1000000,3500000" {
		t.Errorf("browser variant rows=%s groups=%s, want rows=3500000 and groups capped at it", got.Attrs["rows"], got.Attrs["groups"])
	}
	if !strings.Contains(note, "browser") || strings.Contains(note, "--") {
		t.Errorf("note %q: want the browser's fact, no server flag", note)
	}
	if cell.Attrs["rows"] != "4000000" {
		t.Error("the cell's own attributes were changed")
	}
	v, err := parseCell(got, sweep.Params())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.ConfigFrom(v, browserLimits.CellMemory); err != nil {
		t.Errorf("the browser variant does not fit: %v", err)
	}
	// In the source, as key=value lines, the same.
	src := Cell{Kind: KindSweep, Source: "rows=4000000 groups=1e3,1e4,1e5,1e6,4e6\nreps=1"}
	if got, _, err := sweepVariant(src, browserLimits); err != nil || got.Attrs["rows"] != "3500000" || got.Source != "" {
		t.Errorf("source parameters: variant %+v, %v", got, err)
	}
	// Far beyond the browser (2 G rows): the memory error, not a variant.
	if _, note, _ := sweepVariant(Cell{Kind: KindSweep, Attrs: map[string]string{"rows": "2147483648"}}, browserLimits); note != "" {
		t.Errorf("rows=2147483648 got a variant: %q", note)
	}
	for _, lim := range []Limits{{}, {CellMemory: 4 << 30}, oneThreadServer} {
		if got, note, _ := sweepVariant(cell, lim); note != "" || got.Attrs["rows"] != "4000000" {
			t.Errorf("server %+v: ran rows=%s (%q), want the cell as written", lim, got.Attrs["rows"], note)
		}
	}
}

// TestBrowserMemoryError checks that a memory error in the browser names
// the browser's memory, never a server flag.
func TestBrowserMemoryError(t *testing.T) {
	me := &param.MemoryError{What: "latency max=1GiB", Need: 1 << 30, Limit: 512 << 20}
	err := browserLimits.limitError(me)
	var ce *CellError
	if !errors.As(err, &ce) || ce.Ename != ErrMemoryLimit {
		t.Fatalf("error %v, want a MemoryLimit CellError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "--cell-memory") || !strings.Contains(msg, "browser") {
		t.Errorf("browser message %q", msg)
	}
	for _, lim := range []Limits{{}, oneThreadServer} {
		if msg := lim.limitError(me).Error(); !strings.Contains(msg, "--cell-memory") || strings.Contains(msg, "browser") {
			t.Errorf("server %+v: message %q should name --cell-memory, not the browser", lim, msg)
		}
	}
}

// TestBrowserThreadsError checks that a threads error names the browser's
// one thread in the browser only.
func TestBrowserThreadsError(t *testing.T) {
	te := &param.ThreadsError{Want: 2, Have: 1}
	var ce *CellError
	if err := browserLimits.limitError(te); !errors.As(err, &ce) || ce.Ename != ErrUnavailable || !strings.Contains(err.Error(), "browser") {
		t.Errorf("browser: %v, want an Unavailable error naming the browser", err)
	}
	if err := oneThreadServer.limitError(te); !errors.As(err, &ce) || ce.Ename != ErrUnavailable || strings.Contains(err.Error(), "browser") {
		t.Errorf("one-thread server: %v, want an Unavailable error without the browser", err)
	}
}

// TestMemoryHint checks that only the browser's MemoryLimit errors get
// the browser's advice; a server limited to one thread gets none.
func TestMemoryHint(t *testing.T) {
	tests := []struct {
		lim  Limits
		set  int64  // the session's memory_limit
		want string // in the hint; "" for no hint
	}{
		{browserLimits, 0, "in this browser a query may hold at most 512MiB"},
		{browserLimits, 512 << 20, "in this browser a query may hold at most 512MiB"},
		{browserLimits, 32 << 20, ""}, // lowered by the cell: SET memory_limit can raise it
		{oneThreadServer, 0, ""},
		{Limits{}, 0, ""},
	}
	for _, tt := range tests {
		got := memoryHint(tt.lim, tt.set)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("memoryHint(%+v) = %q, want %q", tt.lim, got, tt.want)
		}
	}
}

// TestLatencyVariant checks that a latency cell asking for the disk level
// runs without it in the browser, saying so, and as written elsewhere,
// a one-thread server included.
func TestLatencyVariant(t *testing.T) {
	tests := []struct {
		name  string
		cell  Cell
		lim   Limits
		disk  bool // the disk parameter of the cell run
		noted bool
	}{
		{"browser, attribute", Cell{Kind: KindLatency, Attrs: map[string]string{"max": "64M", "disk": "true"}}, browserLimits, false, true},
		{"browser, source", Cell{Kind: KindLatency, Source: "max=64M disk=on disk_size=256M"}, browserLimits, false, true},
		{"browser, no disk", Cell{Kind: KindLatency, Attrs: map[string]string{"max": "64M"}}, browserLimits, false, false},
		{"one-thread server", Cell{Kind: KindLatency, Attrs: map[string]string{"max": "64M", "disk": "true"}}, oneThreadServer, true, false},
		{"server", Cell{Kind: KindLatency, Attrs: map[string]string{"max": "64M", "disk": "true"}}, Limits{}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note, err := latencyVariant(tt.cell, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if (note != "") != tt.noted || tt.noted && (!strings.Contains(note, "browser-sized: no disk level") || strings.Contains(note, "--")) {
				t.Errorf("note %q", note)
			}
			v, err := parseCell(got, latency.Params())
			if err != nil {
				t.Fatal(err)
			}
			if v.Bool("disk") != tt.disk || v.Int("max") != 64<<20 {
				t.Errorf("runs disk=%v max=%d, want disk=%v max=64 MiB", v.Bool("disk"), v.Int("max"), tt.disk)
			}
			if _, err := latency.ConfigFrom(v, tt.lim.CellMemory); err != nil && tt.lim.Browser {
				t.Errorf("the browser's cell does not run: %v", err)
			}
		})
	}
}
