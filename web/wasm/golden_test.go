package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"cachebook/engine/gen"
	"cachebook/kernel"
	"cachebook/notebook/predict"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the native kernel")

// goldenRows is the size of the generated hits table in the golden test.
const goldenRows = 10000

type goldenCell struct {
	Kind    string            `json:"kind"`
	Code    string            `json:"code"`
	Attrs   map[string]string `json:"attrs"`
	Predict *predict.Spec     `json:"predict,omitempty"`
	Guess   *predict.Guess    `json:"guess,omitempty"`
}

func loadCells(t *testing.T) []goldenCell {
	t.Helper()
	b, err := os.ReadFile("testdata/cells.json")
	if err != nil {
		t.Fatal(err)
	}
	var cells []goldenCell
	if err := json.Unmarshal(b, &cells); err != nil {
		t.Fatal(err)
	}
	return cells
}

// runNative runs cells through the browser's kernel configuration built
// natively (attach, handle) and returns every frame it sent.
func runNative(t *testing.T, cells []goldenCell) [][]byte {
	t.Helper()
	db, _, err := newTable(gen.Options{Rows: goldenRows, Order: "shuffled", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := attach(db)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	frames := [][]byte{sub.Welcome}
	for i, c := range cells {
		id := fmt.Sprintf("cell-%d", i)
		req := kernel.NewMessage(kernel.ChannelShell, kernel.MsgExecuteRequest, "test", kernel.Header{},
			kernel.ExecuteRequest{Code: c.Code, Kind: c.Kind, Attrs: c.Attrs, Predict: c.Predict, Guess: c.Guess})
		req.Header.MsgID = id
		data, err := kernel.Encode(&req)
		if err != nil {
			t.Fatal(err)
		}
		handle(sub, data)
		replied := false
		timeout := time.After(2 * time.Minute)
		for done := false; !done; {
			select {
			case f, ok := <-sub.C:
				if !ok {
					t.Fatal("subscription closed")
				}
				frames = append(frames, f)
				var m kernel.Message
				if err := json.Unmarshal(f, &m); err != nil {
					t.Fatal(err)
				}
				switch {
				case m.Header.MsgType == kernel.MsgExecuteReply && m.ParentHeader.MsgID == id:
					replied = true
				case replied && m.Header.MsgType == kernel.MsgStatus:
					done = true
				}
			case <-timeout:
				t.Fatalf("cell %d: no reply", i)
			}
		}
	}
	return frames
}

// buildWasm builds this command for js/wasm into a temporary directory
// and returns Node's path and the build's; it skips the test where Node
// is not installed.
func buildWasm(t *testing.T) (node, wasm string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (apt-get install nodejs): the js/wasm half of the test cannot run")
	}
	wasm = filepath.Join(t.TempDir(), "cachebook.wasm")
	build := exec.Command("go", "build", "-o", wasm, ".")
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build wasm: %v\n%s", err, out)
	}
	return node, wasm
}

// runWasm runs cells through the js/wasm build under Node.
func runWasm(t *testing.T, cells []goldenCell) [][]byte {
	t.Helper()
	node, wasm := buildWasm(t)
	dir := t.TempDir()
	cellsPath := filepath.Join(dir, "cells.json")
	b, _ := json.Marshal(cells)
	if err := os.WriteFile(cellsPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "frames.json")
	cmd := exec.Command(node, "node-kernel.mjs", wasm, cellsPath, out, fmt.Sprint(goldenRows))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, len(raw))
	for i, r := range raw {
		frames[i] = r
	}
	return frames
}

// TestGolden: the same cells produce the same message sequence and the
// same result JSON, timings and machine-dependent measurements aside,
// through the native kernel and through its js/wasm build under Node, and
// both match testdata/golden.json.
func TestGolden(t *testing.T) {
	cells := loadCells(t)
	native := normalize(t, runNative(t, cells))
	if *update {
		if err := os.WriteFile("testdata/golden.json", native, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(native, golden) {
		t.Errorf("native transcript differs from testdata/golden.json (go test -run TestGolden -update to accept):\n%s", diff(golden, native))
	}
	if testing.Short() {
		t.Skip("-short: the js/wasm half builds the wasm and runs Node")
	}
	if runtime.GOOS == "js" {
		return
	}
	wasm := normalize(t, runWasm(t, cells))
	if !bytes.Equal(wasm, golden) {
		t.Errorf("js/wasm transcript differs from testdata/golden.json:\n%s", diff(golden, wasm))
	}
}

// normalize reduces a transcript to what must not differ between
// runtimes: message types and channels in order, replies and errors, SQL
// results; it drops ids, dates, timings, progress displays (their number
// depends on time) and the values of measurements (they are the
// machine's), keeping their shape.
func normalize(t *testing.T, frames [][]byte) []byte {
	t.Helper()
	var out []any
	for _, f := range frames {
		var m map[string]any
		if err := json.Unmarshal(f, &m); err != nil {
			t.Fatal(err)
		}
		h, _ := m["header"].(map[string]any)
		typ, _ := h["msg_type"].(string)
		c, _ := m["content"].(map[string]any)
		if data, ok := c["data"].(map[string]any); ok {
			if _, ok := data[kernel.MIMEProgress]; ok {
				continue
			}
			if typ == kernel.MsgUpdateDisplayData {
				continue // live measurement updates are rate-limited in time
			}
		}
		if c["ename"] == kernel.ErrUnknownKind {
			// The list of kinds it names grows with the registry.
			cut := func(v any) any {
				if s, ok := v.(string); ok {
					s, _, _ = strings.Cut(s, " (it runs:")
					return s
				}
				return v
			}
			c["evalue"] = cut(c["evalue"])
			if tb, ok := c["traceback"].([]any); ok {
				for i := range tb {
					tb[i] = cut(tb[i])
				}
			}
		}
		if typ == kernel.MsgWelcome {
			c = map[string]any{"protocol": c["protocol"], "session": c["session"]}
		}
		out = append(out, map[string]any{"channel": m["channel"], "type": typ, "content": scrub(c, "")})
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// dropped are keys whose values are times, ids or the machine's.
var dropped = []string{"timings", "elapsed_ns", "queued_ns", "run_ns", "total_ns", "time_ns", "kernel_session", "transient"}

func scrub(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		if key == kernel.MIMEMeasurement {
			return shape(x)
		}
		if key == kernel.MIMEPrediction {
			// A measured value from timings is the machine's: keep
			// whether there is one.
			out := map[string]any{}
			for k, e := range x {
				out[k] = e
			}
			if out["measured"] != nil {
				out["measured"] = "number"
			}
			return out
		}
		out := map[string]any{}
		for k, e := range x {
			if slices.Contains(dropped, k) || (k == kernel.MIMEText && (x[kernel.MIMEMeasurement] != nil || x[kernel.MIMEPrediction] != nil)) {
				continue
			}
			out[k] = scrub(e, k)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = scrub(e, key)
		}
		return out
	}
	return v
}

// shape describes a measurement by its kind, the keys of its result and
// the length of its lists: the same on every machine.
func shape(m map[string]any) any {
	kind, _ := m["kind"].(string)
	res, _ := m[kind].(map[string]any)
	var keys []string
	lens := map[string]int{}
	for k, v := range res {
		keys = append(keys, k)
		if l, ok := v.([]any); ok && (k == "points" || k == "results" || k == "tables") {
			lens[k] = len(l)
		}
	}
	sort.Strings(keys)
	out := map[string]any{"kind": kind, "keys": keys, "lengths": lens}
	if kind == kernel.KindExperiment {
		out["experiment"] = res["experiment"]
		out["params"] = res["params"]
	}
	if m["live"] != nil {
		out["live"] = m["live"]
	}
	return out
}

// diff shows the first differing line of two transcripts with context.
func diff(want, got []byte) string {
	wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			lo := max(0, i-8)
			return fmt.Sprintf("line %d:\nwant %s\ngot  %s\ncontext (got):\n%s", i+1, w, g, bytes.Join(gl[lo:min(len(gl), i+3)], []byte("\n")))
		}
	}
	return "(equal)"
}
