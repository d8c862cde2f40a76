package jupyter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cachebook/engine/gen/gentest"
	"cachebook/lessons"
	"cachebook/notebook"
)

// These tests drive the cachebook binary as a Jupyter kernel with the real
// clients: Debian's python3-jupyter-client, python3-nbclient and
// python3-nbformat (on /usr/bin/python3). Without them the tests skip,
// unless CACHEBOOK_E2E_REQUIRE is set (CI), where they fail.

func TestMain(m *testing.M) {
	code := m.Run()
	if setup.dir != "" {
		os.RemoveAll(setup.dir)
	}
	gentest.Cleanup()
	os.Exit(code)
}

const python = "/usr/bin/python3"

var setup struct {
	once      sync.Once
	dir       string // temporary directory of the shared setup
	bin       string // the cachebook binary
	jupyter   string // JUPYTER_PATH entry holding the kernelspec
	err       error
	skip      string
	buildTime time.Duration
}

// kernelspec builds cachebook, installs its kernelspec under a temporary
// prefix with the test data directory, and returns the environment the
// Python clients need.
func kernelspec(t *testing.T) []string {
	t.Helper()
	setup.once.Do(func() {
		if out, err := exec.Command(python, "-c", "import jupyter_client, nbclient, nbformat, zmq").CombinedOutput(); err != nil {
			setup.skip = fmt.Sprintf("%s cannot import the Jupyter clients (apt-get install python3-jupyter-client python3-nbclient python3-nbformat): %v: %s",
				python, err, bytes.TrimSpace(out))
			return
		}
		data := gentest.HitsDir(t)
		setup.dir, setup.err = os.MkdirTemp("", "cachebook-jupyter-*")
		if setup.err != nil {
			return
		}
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		setup.bin = filepath.Join(setup.dir, "cachebook")
		start := time.Now()
		if out, err := exec.Command(gobin, "build", "-o", setup.bin, "cachebook/cmd/cachebook").CombinedOutput(); err != nil {
			setup.err = fmt.Errorf("go build: %v: %s", err, out)
			return
		}
		setup.buildTime = time.Since(start)
		prefix := filepath.Join(setup.dir, "prefix")
		if out, err := exec.Command(setup.bin, "jupyter", "install", "--prefix", prefix, "--data", data).CombinedOutput(); err != nil {
			setup.err = fmt.Errorf("cachebook jupyter install: %v: %s", err, out)
			return
		}
		setup.jupyter = filepath.Join(prefix, "share", "jupyter")
		setup.err = capCellMemory(filepath.Join(setup.jupyter, "kernels", "cachebook", "kernel.json"), "128MiB")
	})
	if setup.skip != "" {
		if os.Getenv("CACHEBOOK_E2E_REQUIRE") != "" {
			t.Fatalf("CACHEBOOK_E2E_REQUIRE is set but the Jupyter tests cannot run: %s", setup.skip)
		}
		t.Skip(setup.skip)
	}
	if setup.err != nil {
		t.Fatal(setup.err)
	}
	runtimeDir := t.TempDir()
	return append(os.Environ(),
		"JUPYTER_PATH="+setup.jupyter,
		"JUPYTER_RUNTIME_DIR="+runtimeDir,
		"JUPYTER_DATA_DIR="+filepath.Join(runtimeDir, "data"),
		"JUPYTER_CONFIG_DIR="+filepath.Join(runtimeDir, "config"),
		"JUPYTER_PLATFORM_DIRS=1",
		"PYTHONDONTWRITEBYTECODE=1",
	)
}

// capCellMemory adds --cell-memory to the kernelspec's command line. By
// default the kernel takes a quarter of physical memory, and the keys
// table that lessons 2, 3, 4, 7 and 8 name is sized within a quarter of
// that: on a 24 GiB machine lesson 8's two-key GROUP BY then ran past
// nbclient's 120 s cell timeout with 2.5 GB resident. With 128 MiB the
// table is 32 MiB, still capped below four times any last level over
// 8 MiB, so the same cells run the same code on fewer rows; lesson 8's
// transpose experiment, which runs at the lesson's size here, needs
// 65 MiB, so the cap is not the Go lesson tests' 64 MiB.
func capCellMemory(kernelJSON, size string) error {
	b, err := os.ReadFile(kernelJSON)
	if err != nil {
		return fmt.Errorf("read the kernelspec: %w", err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("%s: %w", kernelJSON, err)
	}
	argv, ok := spec["argv"].([]any)
	if !ok {
		return fmt.Errorf("%s: no argv", kernelJSON)
	}
	spec["argv"] = append(argv, "--cell-memory", size)
	if b, err = json.Marshal(spec); err != nil {
		return err
	}
	return os.WriteFile(kernelJSON, b, 0o644)
}

// runPython runs a script of testdata and returns its standard output and
// error.
func runPython(t *testing.T, env []string, timeout time.Duration, args ...string) (stdout, stderr []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", python, strings.Join(args, " "), err, o.Bytes(), e.Bytes())
	}
	return o.Bytes(), e.Bytes()
}

// event is one iopub message as client_e2e.py summarises it.
type event struct {
	Type           string   `json:"type"`
	State          string   `json:"state"`
	Mimes          []string `json:"mimes"`
	DisplayID      string   `json:"display_id"`
	Ename          string   `json:"ename"`
	Evalue         string   `json:"evalue"`
	Traceback      []string `json:"traceback"`
	ExecutionCount int      `json:"execution_count"`
	Text           string   `json:"text"`
}

type reply struct {
	Status         string   `json:"status"`
	ExecutionCount int      `json:"execution_count"`
	Ename          string   `json:"ename"`
	Evalue         string   `json:"evalue"`
	Traceback      []string `json:"traceback"`
}

type run struct {
	Reply reply   `json:"reply"`
	IOPub []event `json:"iopub"`
}

type found struct {
	Status  string            `json:"status"`
	Found   bool              `json:"found"`
	Data    map[string]string `json:"data"`
	Matches []string          `json:"matches"`
}

type clientReport struct {
	StartS     float64 `json:"start_s"`
	KernelInfo struct {
		ProtocolVersion string            `json:"protocol_version"`
		Implementation  string            `json:"implementation"`
		LanguageInfo    map[string]string `json:"language_info"`
		Status          string            `json:"status"`
	} `json:"kernel_info"`
	KernelInfoIOPub []event `json:"kernel_info_iopub"`
	SQL             run     `json:"sql"`
	Fail            run     `json:"fail"`
	TooBig          run     `json:"too_big"`
	Latency         run     `json:"latency"`
	Interrupt       struct {
		Reply     reply     `json:"reply"`
		LatencyMs float64   `json:"latency_ms"`
		TriesMs   []float64 `json:"tries_ms"`
	} `json:"interrupt"`
	SIGINT struct {
		Reply     reply     `json:"reply"`
		LatencyMs float64   `json:"latency_ms"`
		TriesMs   []float64 `json:"tries_ms"`
		Alive     bool      `json:"alive"`
		Next      reply     `json:"next"`
	} `json:"sigint"`
	InterruptQueue struct {
		First      reply          `json:"first"`
		Queued     map[string]int `json:"queued"`
		Unanswered int            `json:"unanswered"`
		After      reply          `json:"after"`
	} `json:"interrupt_queue"`
	AfterInterrupt struct {
		Reply reply   `json:"reply"`
		Ms    float64 `json:"ms"`
	} `json:"after_interrupt"`
	Complete   map[string]found `json:"complete"`
	Inspect    map[string]found `json:"inspect"`
	IsComplete map[string]struct {
		Status string `json:"status"`
	} `json:"is_complete"`
	CommInfo struct {
		Status string         `json:"status"`
		Comms  map[string]any `json:"comms"`
	} `json:"comm_info"`
	Heartbeat struct {
		Echo          *string `json:"echo"`
		Ms            float64 `json:"ms"`
		ClientBeating bool    `json:"client_beating"`
	} `json:"heartbeat"`
	BadSignature struct {
		ReplyReceived bool     `json:"reply_received"`
		IOPubForIt    []event  `json:"iopub_for_it"`
		After         reply    `json:"after"`
		AfterText     []string `json:"after_text"`
	} `json:"bad_signature"`
	TwoClients struct {
		Second   reply    `json:"second"`
		FirstSaw []string `json:"first_saw"`
		First    reply    `json:"first"`
	} `json:"two_clients"`
	RestartS     float64 `json:"restart_s"`
	AfterRestart struct {
		Reply      reply `json:"reply"`
		NewProcess bool  `json:"new_process"`
	} `json:"after_restart"`
	ShutdownS          float64 `json:"shutdown_s"`
	AliveAfterShutdown bool    `json:"alive_after_shutdown"`
}

func types(evs []event) []string {
	var s []string
	for _, e := range evs {
		t := e.Type
		if e.State != "" {
			t += ":" + e.State
		}
		s = append(s, t)
	}
	return s
}

func find(evs []event, typ string) *event {
	for i := range evs {
		if evs[i].Type == typ {
			return &evs[i]
		}
	}
	return nil
}

// TestJupyterClient starts the kernel from its kernelspec through
// jupyter_client's KernelManager and checks the protocol end to end.
func TestJupyterClient(t *testing.T) {
	env := kernelspec(t)
	out, stderr := runPython(t, env, 2*time.Minute, "testdata/client_e2e.py")
	var r clientReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("client_e2e.py output: %v\n%s\nstderr:\n%s", err, out, stderr)
	}
	t.Logf("kernel start %.0f ms, interrupt → execute_reply %.1f ms of tries %.1f (SIGINT %.1f ms), next cell %.1f ms, heartbeat %.2f ms, restart %.0f ms, shutdown %.0f ms",
		r.StartS*1000, r.Interrupt.LatencyMs, r.Interrupt.TriesMs, r.SIGINT.TriesMs, r.AfterInterrupt.Ms, r.Heartbeat.Ms, r.RestartS*1000, r.ShutdownS*1000)

	ki := r.KernelInfo
	if ki.Status != "ok" || ki.ProtocolVersion != "5.3" || ki.Implementation != "cachebook" {
		t.Errorf("kernel_info: %+v", ki)
	}
	for k, want := range map[string]string{"name": "sql", "codemirror_mode": "sql", "file_extension": ".sql", "mimetype": "application/sql"} {
		if got := ki.LanguageInfo[k]; got != want {
			t.Errorf("language_info.%s = %q, want %q", k, got, want)
		}
	}
	if got := types(r.KernelInfoIOPub); !slices.Equal(got, []string{"status:busy", "status:idle"}) {
		t.Errorf("kernel_info iopub = %v, want busy, idle", got)
	}

	// SQL: busy, execute_input, ..., execute_result (html + text + JSON), idle.
	sq := types(r.SQL.IOPub)
	if r.SQL.Reply.Status != "ok" || r.SQL.Reply.ExecutionCount != 1 || len(sq) < 4 || sq[0] != "status:busy" ||
		sq[1] != "execute_input" || sq[len(sq)-1] != "status:idle" {
		t.Errorf("sql: reply %+v, iopub %v", r.SQL.Reply, sq)
	}
	if res := find(r.SQL.IOPub, "execute_result"); res == nil {
		t.Errorf("sql: no execute_result in %v", sq)
	} else {
		for _, m := range []string{"text/plain", "text/html", "application/vnd.cachebook.result+json"} {
			if !slices.Contains(res.Mimes, m) {
				t.Errorf("sql execute_result lacks %s: %v", m, res.Mimes)
			}
		}
		if !strings.Contains(res.Text, "(3 rows)") {
			t.Errorf("sql text/plain = %q", res.Text)
		}
	}

	// The kernel applies the cell-memory cap, as cachebook serve does.
	if r.TooBig.Reply.Ename != "MemoryLimit" {
		t.Errorf("parallel-merge of 2^34 rows: reply %+v, want MemoryLimit", r.TooBig.Reply)
	}

	// A failing cell: error on iopub and in the reply, with the caret.
	if r.Fail.Reply.Status != "error" || r.Fail.Reply.Ename != "SQLError" || !strings.Contains(r.Fail.Reply.Evalue, "nosuchcolumn") {
		t.Errorf("failing cell reply: %+v", r.Fail.Reply)
	}
	if e := find(r.Fail.IOPub, "error"); e == nil {
		t.Errorf("failing cell: no error message in %v", types(r.Fail.IOPub))
	} else if e.Ename != "SQLError" || len(e.Traceback) < 3 || e.Traceback[0] != "SELECT nosuchcolumn" || strings.TrimSpace(e.Traceback[1]) != "^" ||
		strings.Index(e.Traceback[1], "^") != strings.Index(e.Traceback[0], "nosuchcolumn") {
		t.Errorf("failing cell error: %+v", e)
	}

	// A magic cell: live displays with a display_id, then a chart.
	var shown, updated bool
	for _, e := range r.Latency.IOPub {
		shown = shown || e.Type == "display_data" && e.DisplayID != ""
		updated = updated || e.Type == "update_display_data" && e.DisplayID != ""
	}
	if !shown || !updated || r.Latency.Reply.Status != "ok" {
		t.Errorf("%%%%latency: reply %+v, iopub %v", r.Latency.Reply, types(r.Latency.IOPub))
	}
	if res := find(r.Latency.IOPub, "execute_result"); res == nil {
		t.Errorf("%%%%latency: no execute_result")
	} else {
		for _, m := range []string{"text/plain", "application/vnd.vegalite.v5+json", "image/svg+xml", "image/png", "application/vnd.cachebook.measurement+json"} {
			if !slices.Contains(res.Mimes, m) {
				t.Errorf("%%%%latency result lacks %s: %v", m, res.Mimes)
			}
		}
	}

	// Interrupt: the cell stops within 200 ms and the kernel goes on.
	if r.Interrupt.Reply.Status != "error" || r.Interrupt.Reply.Ename != "Interrupted" {
		t.Errorf("interrupted cell reply: %+v", r.Interrupt.Reply)
	}
	if r.Interrupt.LatencyMs > 200 {
		t.Errorf("interrupt → execute_reply took %.1f ms, want ≤ 200 ms", r.Interrupt.LatencyMs)
	}
	if r.AfterInterrupt.Reply.Status != "ok" {
		t.Errorf("cell after the interrupt: %+v", r.AfterInterrupt.Reply)
	}

	// An interrupt aborts every request sent before it; one sent after
	// it runs.
	iq := r.InterruptQueue
	if iq.First.Ename != "Interrupted" || iq.Unanswered != 0 || iq.Queued["aborted"] != 300 || iq.After.Status != "ok" {
		t.Errorf("interrupt with 300 requests queued: %+v, want the first interrupted, all 300 aborted, the next ok", iq)
	}
	if r.SIGINT.Reply.Ename != "Interrupted" || !r.SIGINT.Alive || r.SIGINT.LatencyMs > 200 || r.SIGINT.Next.Status != "ok" {
		t.Errorf("SIGINT: %+v", r.SIGINT)
	}

	// Completion, inspection, is_complete, comm_info.
	for key, want := range map[string]string{"column": "UserID", "table": "hits", "set_name": "group_by",
		"set_value": "'radix'", "magic": "%%latency", "experiment": "false-sharing"} {
		if c := r.Complete[key]; c.Status != "ok" || !slices.Contains(c.Matches, want) {
			t.Errorf("complete %s: %+v, want a match %q", key, c, want)
		}
	}
	for key, want := range map[string]string{"table": "DESCRIBE hits", "function": "regexp_replace(s, pattern", "setting": "SET group_by"} {
		if c := r.Inspect[key]; !c.Found || !strings.Contains(c.Data["text/plain"], want) {
			t.Errorf("inspect %s: %+v, want %q", key, c, want)
		}
	}
	if !strings.Contains(r.Inspect["table"].Data["text/plain"], "UserID") {
		t.Errorf("inspect hits does not list UserID: %q", r.Inspect["table"].Data["text/plain"])
	}
	for key, want := range map[string]string{"partial": "incomplete", "done": "complete", "string": "incomplete"} {
		if got := r.IsComplete[key].Status; got != want {
			t.Errorf("is_complete %s = %q, want %q", key, got, want)
		}
	}
	if r.CommInfo.Status != "ok" || len(r.CommInfo.Comms) != 0 {
		t.Errorf("comm_info: %+v", r.CommInfo)
	}

	// Heartbeat.
	if r.Heartbeat.Echo == nil || *r.Heartbeat.Echo != "ping-cachebook" || !r.Heartbeat.ClientBeating {
		t.Errorf("heartbeat: %+v", r.Heartbeat)
	}

	// A wrongly signed execute_request: no reply, no output, not counted.
	b := r.BadSignature
	if b.ReplyReceived || len(b.IOPubForIt) != 0 {
		t.Errorf("a wrongly signed message was answered: %+v", b)
	}
	if b.After.Status != "ok" || b.After.ExecutionCount != r.SIGINT.Next.ExecutionCount+1 ||
		len(b.AfterText) != 1 || !strings.Contains(b.AfterText[0], "42") {
		t.Errorf("after the wrongly signed message: %+v (previous count %d)", b, r.SIGINT.Next.ExecutionCount)
	}
	if !bytes.Contains(stderr, []byte("invalid message signature")) {
		t.Errorf("the kernel did not log the dropped message; stderr:\n%s", stderr)
	}

	// Two clients.
	tc := r.TwoClients
	if tc.Second.Status != "ok" || tc.First.Status != "ok" || tc.First.ExecutionCount != tc.Second.ExecutionCount+1 ||
		!slices.Contains(tc.FirstSaw, "execute_result") || !slices.Contains(tc.FirstSaw, "execute_input") {
		t.Errorf("two clients: %+v", tc)
	}

	// Restart: a new process, counting from 1 again; then shutdown.
	if !r.AfterRestart.NewProcess || r.AfterRestart.Reply.Status != "ok" || r.AfterRestart.Reply.ExecutionCount != 1 {
		t.Errorf("after restart: %+v", r.AfterRestart)
	}
	if r.AliveAfterShutdown {
		t.Error("the kernel is alive after shutdown_kernel")
	}
}

// nbReport is one notebook executed by nbclient_e2e.py.
type nbReport struct {
	Notebook    string         `json:"notebook"`
	Cells       int            `json:"cells"`
	CodeCells   int            `json:"code_cells"`
	Errors      int            `json:"errors"`
	Exception   *string        `json:"exception"`
	OutputTypes map[string]int `json:"output_types"`
	Mimes       map[string]int `json:"mimes"`
	Seconds     float64        `json:"seconds"`
	Executed    string         `json:"executed"`
}

// TestNbclientLessons exports every lesson to .ipynb with `cachebook
// export`, executes it with nbclient (measurement cells with small sizes),
// checks the outputs' MIME types, and imports the executed notebook back.
func TestNbclientLessons(t *testing.T) {
	env := kernelspec(t)
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"testdata/nbclient_e2e.py", dir}
	want := map[string][]notebook.CellKind{}
	for _, l := range list {
		path := filepath.Join(dir, "src-"+l.Name+".ipynb")
		if out, err := exec.Command(setup.bin, "export", l.Name, "--to", "ipynb", "--out", path).CombinedOutput(); err != nil {
			t.Fatalf("cachebook export %s: %v: %s", l.Name, err, out)
		}
		nb, err := lessons.Notebook(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range nb.Cells {
			if c.Kind.IsCode() {
				want["src-"+l.Name+".ipynb"] = append(want["src-"+l.Name+".ipynb"], c.Kind)
			}
		}
		args = append(args, path)
	}
	out, _ := runPython(t, env, 3*time.Minute, args...)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var r nbReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("nbclient_e2e.py line %q: %v", sc.Text(), err)
		}
		n++
		t.Logf("%s: %d cells (%d code), %.2f s, outputs %v, MIME types %v", r.Notebook, r.Cells, r.CodeCells, r.Seconds, r.OutputTypes, r.Mimes)
		if r.Exception != nil || r.Errors != 0 {
			t.Errorf("%s: %d error outputs; exception: %v", r.Notebook, r.Errors, *r.Exception)
		}
		kinds := want[r.Notebook]
		need := []string{"text/plain"}
		for _, k := range kinds {
			switch k {
			case notebook.KindSQL:
				need = append(need, "text/html", "application/vnd.cachebook.result+json")
			case notebook.KindLatency, notebook.KindBandwidth, notebook.KindSweep:
				need = append(need, "application/vnd.vegalite.v5+json", "image/svg+xml", "image/png", "application/vnd.cachebook.measurement+json")
			case notebook.KindExperiment:
				need = append(need, "application/vnd.cachebook.measurement+json")
			case notebook.KindCachesim:
				need = append(need, "application/vnd.cachebook.model+json")
			}
		}
		for _, m := range need {
			if r.Mimes[m] == 0 {
				t.Errorf("%s: no output of type %s (got %v)", r.Notebook, m, r.Mimes)
			}
		}
		// Import the executed notebook: same code cells, each with outputs.
		data, err := os.ReadFile(r.Executed)
		if err != nil {
			t.Fatal(err)
		}
		back, err := notebook.ImportIpynb(data)
		if err != nil {
			t.Fatalf("import %s: %v", r.Notebook, err)
		}
		var got []notebook.CellKind
		for _, c := range back.Cells {
			if !c.Kind.IsCode() {
				continue
			}
			got = append(got, c.Kind)
			if len(c.Outputs) == 0 {
				t.Errorf("%s: imported %s cell %s has no outputs", r.Notebook, c.Kind, c.ID)
			}
		}
		if !slices.Equal(got, kinds) {
			t.Errorf("%s: imported code cells %v, want %v", r.Notebook, got, kinds)
		}
		// Saved as a cachebook notebook and read again, the outputs are the
		// same, charts and JSON included.
		again, err := notebook.Parse(back.Markdown())
		if err != nil {
			t.Fatalf("%s: parse the imported notebook's Markdown: %v", r.Notebook, err)
		}
		a, _ := back.Ipynb()
		b, _ := again.Ipynb()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the executed notebook changed on its way through Markdown", r.Notebook)
		}
	}
	if n != len(list) {
		t.Errorf("nbclient ran %d notebooks, want %d", n, len(list))
	}
}

// conformReport is what conform_e2e.py prints.
type conformReport struct {
	RunAll struct {
		Tries        int            `json:"tries"`
		Stopped      int            `json:"stopped"`
		Statuses     [][]string     `json:"statuses"`
		AbortedReply map[string]any `json:"aborted_reply"`
	} `json:"run_all"`
	AfterError  reply `json:"after_error"`
	Counts      []int `json:"counts"`
	HistoryTail struct {
		History [][]any `json:"history"`
	} `json:"history_tail"`
	HistoryRange struct {
		History [][]any `json:"history"`
	} `json:"history_range"`
	CompleteNone struct {
		Matches *[]string `json:"matches"`
	} `json:"complete_none"`
}

// TestJupyterConformance checks with jupyter_client what ipykernel does:
// a "Run all" whose first cell fails at once, sent back to back ten
// times, stops at the error every time (the aborted replies carry no
// execution count); a cell sent after the error runs; silent and
// store_history=False executions do not advance the counter; the history
// holds the session's inputs; a completion without matches is a list.
func TestJupyterConformance(t *testing.T) {
	env := kernelspec(t)
	out, stderr := runPython(t, env, 2*time.Minute, "testdata/conform_e2e.py", "10")
	var r conformReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("conform_e2e.py output: %v\n%s\nstderr:\n%s", err, out, stderr)
	}
	t.Logf("Run all (SELEC 1 and three SELECTs, back to back) stopped at the error %d of %d times", r.RunAll.Stopped, r.RunAll.Tries)
	if r.RunAll.Tries != 10 || r.RunAll.Stopped != 10 {
		t.Errorf("Run all stopped %d of %d times, want 10 of 10: %v", r.RunAll.Stopped, r.RunAll.Tries, r.RunAll.Statuses)
	}
	if _, ok := r.RunAll.AbortedReply["execution_count"]; ok || r.RunAll.AbortedReply["status"] != "aborted" {
		t.Errorf("aborted reply = %v, want status aborted and no execution_count", r.RunAll.AbortedReply)
	}
	if r.AfterError.Status != "ok" {
		t.Errorf("a cell sent after the error was seen: %+v, want ok", r.AfterError)
	}
	if c := r.Counts; len(c) != 4 || c[1] != c[0] || c[2] != c[0] || c[3] != c[0]+1 {
		t.Errorf("execution counts of normal, silent, store_history=False, normal: %v, want n, n, n, n+1", c)
	}
	if h := r.HistoryTail.History; len(h) != 2 || fmt.Sprint(h[0][2]) != "SELECT 'normal 1'" || fmt.Sprint(h[1][2]) != "SELECT 'normal 2'" {
		t.Errorf("history tail n=2: %v", h)
	}
	if h := r.HistoryRange.History; len(h) != 2 || fmt.Sprint(h[0][1]) != "1" || fmt.Sprint(h[1][1]) != "2" {
		t.Errorf("history range 1-3: %v", h)
	}
	if r.CompleteNone.Matches == nil {
		t.Error("complete_reply matches is null, want a list")
	}
}

// TestNotebookRunAll runs "Run all" ten times in the classic Notebook
// (Debian's python3-notebook 6.x, in headless Chromium) on a notebook
// whose first cell fails at once: the three cells after it must never
// run, and show no prompt number of their own. It skips without the
// Notebook or Chromium.
func TestNotebookRunAll(t *testing.T) {
	env := kernelspec(t)
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium: %v", err)
	}
	if out, err := exec.Command(python, "-c", "import notebook, tornado; assert notebook.__version__.startswith('6.')").CombinedOutput(); err != nil {
		t.Skipf("no classic Notebook 6 (apt-get install python3-notebook): %v: %s", err, bytes.TrimSpace(out))
	}
	dir := t.TempDir()
	out, stderr := runPython(t, append(env, "HOME="+dir), 4*time.Minute, "testdata/notebook_e2e.py", dir, chromium, "10")
	var r struct {
		Tries   int `json:"tries"`
		Stopped int `json:"stopped"`
		Cells   [][]struct {
			Prompt  *int     `json:"prompt"`
			Outputs []string `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("notebook_e2e.py output: %v\n%s\nstderr:\n%s", err, out, stderr)
	}
	t.Logf("Notebook Run all stopped at the failing cell %d of %d times", r.Stopped, r.Tries)
	if r.Tries != 10 || r.Stopped != 10 {
		t.Errorf("Run all stopped %d of %d times, want 10 of 10: %+v", r.Stopped, r.Tries, r.Cells)
	}
	for i, try := range r.Cells {
		for j, c := range try[1:] {
			if c.Prompt != nil {
				t.Errorf("try %d: aborted cell %d shows In [%d], want no number", i, j+2, *c.Prompt)
			}
		}
	}
}

// TestKernelEndsWithItsClient: a kernel whose client died without
// shutting it down (a killed nbclient) exits soon after, as ipykernel
// does, instead of living on with its memory.
func TestKernelEndsWithItsClient(t *testing.T) {
	env := kernelspec(t)
	cmd := exec.Command(python, "testdata/orphan_e2e.py")
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	// The kernel holds the script's standard output: Wait returns when it
	// has exited too, or ErrWaitDelay.
	cmd.WaitDelay = 20 * time.Second
	err := cmd.Run()
	pid := strings.TrimSpace(out.String())
	if err != nil {
		if p, perr := strconv.Atoi(pid); perr == nil && p > 0 {
			if proc, ferr := os.FindProcess(p); ferr == nil {
				_ = proc.Kill()
			}
		}
		t.Fatalf("orphan_e2e.py (kernel %s): %v, want the kernel to exit when its client has", pid, err)
	}
}
