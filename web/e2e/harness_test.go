package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

var screenshotDir = flag.String("screenshots", "", "directory to write PNG screenshots of the main views to")

// e2eRows is the size of the generated table. The WebAssembly kernel
// generates the same rows (shuffled, seed 1: env.url asks for them with
// ?hits_rows, where the page would otherwise let the kernel size its
// table), so both kernels must return the same answer.
const e2eRows = 100000

// env is what TestMain prepared for the tests.
var env struct {
	skip    string // non-empty: why the browser tests cannot run
	url     string // the page to open, with the token if any and ?hits_rows=e2eRows
	pageURL string // url without hits_rows: the browser kernel sizes its table
	base    string // scheme://host:port
	chrome  string // path of the Chromium binary
	wasm    bool   // cachebook.wasm was built and embedded
	wasmErr string
	// notebooks is the server's --notebooks directory, bin the binary and
	// data the data directory (empty with CACHEBOOK_E2E_URL).
	notebooks, bin, data string
}

func TestMain(m *testing.M) {
	flag.Parse()
	code, cleanup := setup()
	if code == 0 {
		code = m.Run()
	}
	cleanup()
	os.Exit(code)
}

// findChromium returns the browser to drive: $CHROMIUM or the first of the
// usual names on $PATH.
func findChromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		if q, err := exec.LookPath(p); err == nil {
			return q
		}
		return ""
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// repoRoot is the module root, two levels above this package.
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// setup builds the WebAssembly module and the binary, generates the data,
// starts the server and returns a cleanup function. Problems that only
// make the browser tests impossible set env.skip; the exit code is
// non-zero only for a broken build.
func setup() (int, func()) {
	nop := func() {}
	env.chrome = findChromium()
	if env.chrome == "" {
		env.skip = "chromium not found (apt-get install -y chromium, or set $CHROMIUM): skipping browser tests"
		return 0, nop
	}
	if u := os.Getenv("CACHEBOOK_E2E_URL"); u != "" {
		env.pageURL, env.url = u, withHitsRows(u, e2eRows)
		env.base = baseOf(u)
		env.wasm = true
		return 0, nop
	}
	tmp, err := os.MkdirTemp("", "cachebook-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1, nop
	}
	cleanup := func() { os.RemoveAll(tmp) }
	root := repoRoot()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	// The binary embeds web/static/dist/cachebook.wasm (make wasm puts it
	// there). The test builds its own into the temp directory and embeds it
	// with -overlay, so that it never writes into the source tree while
	// other packages build.
	wasmOut := filepath.Join(tmp, "cachebook.wasm")
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", wasmOut, "./web/wasm")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	var overlay []string
	if out, err := cmd.CombinedOutput(); err != nil {
		env.wasmErr = fmt.Sprintf("building cachebook.wasm: %v\n%s", err, out)
	} else {
		env.wasm = true
		ov, err := json.Marshal(map[string]map[string]string{"Replace": {
			filepath.Join(root, "web", "static", "dist", "cachebook.wasm"): wasmOut,
		}})
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, "overlay.json"), ov, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: overlay:", err)
			return 1, cleanup
		}
		overlay = []string{"-overlay", filepath.Join(tmp, "overlay.json")}
	}
	bin := filepath.Join(tmp, "cachebook")
	cmd = exec.Command(goBin, append(append([]string{"build"}, overlay...), "-o", bin, "./cmd/cachebook")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building cachebook: %v\n%s", err, out)
		return 1, cleanup
	}
	data := filepath.Join(tmp, "data")
	cmd = exec.Command(bin, "gen", "--rows", fmt.Sprint(e2eRows), "--order", "shuffled", "--seed", "1", "--out", data)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cachebook gen: %v\n%s", err, out)
		return 1, cleanup
	}
	addr, err := freeAddr()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1, cleanup
	}
	ctx, cancel := context.WithCancel(context.Background())
	env.bin, env.data, env.notebooks = bin, data, filepath.Join(tmp, "notebooks")
	if err := os.MkdirAll(env.notebooks, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		cancel()
		return 1, cleanup
	}
	srv := exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--data", data, "--notebooks", env.notebooks)
	srv.Cancel = func() error { return srv.Process.Signal(os.Interrupt) }
	srv.WaitDelay = 5 * time.Second
	out, err := srv.StdoutPipe()
	if err != nil {
		cancel()
		return 1, cleanup
	}
	srv.Stderr = srv.Stdout
	if err := srv.Start(); err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, "e2e: start server:", err)
		return 1, cleanup
	}
	stop := func() {
		cancel()
		srv.Wait()
		cleanup()
	}
	env.base = "http://" + addr
	urlc := make(chan string, 1)
	var log strings.Builder
	var logMu sync.Mutex
	go scanURL(out, urlc, &log, &logMu)
	select {
	case u := <-urlc:
		env.url = u
	case <-time.After(30 * time.Second):
		env.url = env.base + "/"
	}
	env.pageURL, env.url = env.url, withHitsRows(env.url, e2eRows)
	if err := waitHTTP(env.base+"/", 30*time.Second); err != nil {
		logMu.Lock()
		fmt.Fprintf(os.Stderr, "e2e: server did not come up: %v\n%s", err, log.String())
		logMu.Unlock()
		stop()
		return 1, nop
	}
	return 0, stop
}

// withHitsRows returns the page URL u asking the browser kernel for rows
// rows of hits.
func withHitsRows(u string, rows int) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set("hits_rows", fmt.Sprint(rows))
	p.RawQuery = q.Encode()
	return p.String()
}

var urlRE = regexp.MustCompile(`https?://[^\s"']+`)

// scanURL copies the server's output into log and sends the first URL it
// prints (the one with the token).
func scanURL(r io.Reader, urlc chan<- string, log *strings.Builder, mu *sync.Mutex) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		mu.Lock()
		log.WriteString(line + "\n")
		mu.Unlock()
		if !sent {
			if u := urlRE.FindString(line); u != "" {
				urlc <- u
				sent = true
			}
		}
	}
}

func baseOf(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
			return u[:i+3+j]
		}
	}
	return u
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitHTTP(u string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// browser starts a fresh headless Chromium for one test and returns its
// context; JavaScript exceptions in the page fail the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	if env.skip != "" {
		if os.Getenv("CACHEBOOK_E2E_REQUIRE") != "" {
			t.Fatalf("CACHEBOOK_E2E_REQUIRE is set but the browser tests cannot run: %s", env.skip)
		}
		t.Skip(env.skip)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(env.chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	var mu sync.Mutex
	var exceptions []string
	listen := func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			mu.Lock()
			exceptions = append(exceptions, fmt.Sprintf("%s (%s:%d:%d)", msg, d.URL, d.LineNumber+1, d.ColumnNumber+1))
			mu.Unlock()
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				t.Logf("console.%s: %s", ev.Type, strings.Join(parts, " "))
			}
		}
	}
	// Chromium now and then dies at startup on a loaded machine: retry.
	var ctx context.Context
	var cancelA, cancelC context.CancelFunc
	for attempt := 1; ; attempt++ {
		var actx context.Context
		actx, cancelA = chromedp.NewExecAllocator(context.Background(), append(opts, chromedp.UserDataDir(t.TempDir()))...)
		ctx, cancelC = chromedp.NewContext(actx, chromedp.WithListener(listen))
		err := chromedp.Do(ctx)
		if err == nil {
			break
		}
		cancelC()
		cancelA()
		if attempt == 3 {
			t.Fatalf("start chromium (%s): %v", env.chrome, err)
		}
		t.Logf("chromium failed to start (attempt %d), retrying: %.200s", attempt, err)
		time.Sleep(time.Second)
	}
	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	baseCtx.Store(t, ctx)
	t.Cleanup(func() {
		mu.Lock()
		for _, e := range exceptions {
			t.Errorf("uncaught exception in the page: %s", e)
		}
		mu.Unlock()
		baseCtx.Delete(t)
		cancelT()
		cancelC()
		cancelA()
	})
	return tctx
}

// do runs chromedp actions and fails the test with what it was doing.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		failShot(t)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: timed out", what)
		}
		t.Fatalf("%s: %v", what, err)
	}
}

// baseCtx maps a test to its browser context without the test's timeout,
// so that a screenshot can still be taken after a wait timed out.
var baseCtx sync.Map

// failShot saves a screenshot of the page of a failing step in the temp
// directory and logs its path.
func failShot(t *testing.T) {
	v, ok := baseCtx.Load(t)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(v.(context.Context), 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return
	}
	name := filepath.Join(os.TempDir(), "cachebook-e2e-"+strings.ReplaceAll(t.Name(), "/", "_")+".png")
	if os.WriteFile(name, png, 0o644) == nil {
		t.Logf("screenshot of the failure: %s", name)
	}
}

// get runs one action and returns its value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		failShot(t)
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// poll waits until the JavaScript expression is truthy.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr)(ctx, tg)
		return err
	})
}

// text returns the text of the first element that matches the CSS selector.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, "read "+sel, chromedp.TextContent(chromedp.CSS(sel)))
}

// screenshot saves a PNG of the page when -screenshots is given.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshotDir == "" {
		return
	}
	png := get(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	if small, err := shrinkPNG(png); err == nil {
		png = small
	} else {
		t.Logf("screenshot %s kept at full size: %v", name, err)
	}
	if err := os.MkdirAll(*screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshotDir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
