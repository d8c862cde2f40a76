package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// server is a cachebook serve process of one test.
type server struct {
	cmd *exec.Cmd
	out strings.Builder
}

// startServer runs the test binary's server on addr with token over the
// test data and waits until it answers.
func startServer(t *testing.T, addr, token, notebooks string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(env.bin, "serve", "--addr", addr, "--data", env.data, "--notebooks", notebooks, "--token", token)}
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.stop(os.Kill) })
	if err := waitHTTP("http://"+addr+"/", 30*time.Second); err != nil {
		t.Fatalf("server did not come up: %v\n%s", err, s.out.String())
	}
	return s
}

// stop ends the server with sig (os.Kill for a crash, os.Interrupt for
// Ctrl+C) and waits for it.
func (s *server) stop(sig os.Signal) {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	_ = s.cmd.Wait()
}

// TestServerRestart drives a real tab through server restarts: a crash
// while a cell runs and a restart with the same token (the running cell
// says it was lost, later cells run, also after a reload), then a restart
// with a new token (the tab says the token was refused and how to get the
// new URL; the new URL works).
func TestServerRestart(t *testing.T) {
	if env.bin == "" {
		t.Skip("needs the test's own server binary")
	}
	browser(t)
	// Restarts and reconnects take longer than browser's 60 s.
	v, _ := baseCtx.Load(t)
	ctx, cancel := context.WithTimeout(v.(context.Context), 4*time.Minute)
	defer cancel()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	nbDir := t.TempDir()
	s1 := startServer(t, addr, "tokenA", nbDir)
	base := "http://" + addr
	open := func(u string) {
		t.Helper()
		// The edited lesson would ask before it is left.
		get(t, ctx, "forget the edits", chromedp.Evaluate[bool](`(window.cachebookApp && cachebookApp.nb && cachebookApp.nb.dirty(false), true)`))
		do(t, ctx, "open a lesson at "+u,
			chromedp.Navigate(u),
			chromedp.WaitVisible(chromedp.CSS(".lessons a")),
			chromedp.Click(chromedp.CSS(".lessons a")),
			chromedp.WaitVisible(chromedp.CSS(".notebook .cell.code .cm-editor")),
			chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
		)
	}
	runQuery := func(what string) {
		t.Helper()
		start := time.Now()
		defer func() { t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond)) }()
		id := setCell(t, ctx, fmt.Sprintf("SELECT %d AS probe", time.Now().UnixNano()%1000))
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		do(t, tctx, what,
			clickRun(id),
			chromedp.WaitVisible(cellSel(id, "table.grid tbody tr")),
			chromedp.WaitNotPresent(chromedp.CSS(cellEl(id)+".running")),
		)
	}
	open(base + "/?token=tokenA")
	runQuery("a cell runs before the restart")

	// A crash while a long cell runs, then the same token again.
	long := strings.Repeat(query+";\n", 3000)
	id := setCell(t, ctx, long)
	do(t, ctx, "start a long cell", clickRun(id), chromedp.WaitVisible(chromedp.CSS(cellEl(id)+".running")))
	time.Sleep(300 * time.Millisecond)
	s1.stop(os.Kill)
	s2 := startServer(t, addr, "tokenA", nbDir)
	do(t, ctx, "the running cell is lost",
		chromedp.WaitVisible(cellSel(id, ".error .ename")),
		chromedp.WaitNotPresent(chromedp.CSS(cellEl(id)+".running")),
		chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)),
	)
	if msg := text(t, ctx, cellEl(id)+" .error"); !strings.Contains(msg, "server restarted") {
		t.Errorf("lost cell says %q", msg)
	}
	runQuery("a cell runs after the restart (same token)")
	// A reload keeps the tab's session and its replay cursor.
	get(t, ctx, "forget the edits", chromedp.Evaluate[bool](`(cachebookApp.nb.dirty(false), true)`))
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.status[data-connection="connected"]`)))
	open(base + "/")
	runQuery("a cell runs after the restart and a reload")

	// A restart with a new token (Ctrl+C, as make run is stopped): the
	// tab must say so.
	s2.stop(os.Interrupt)
	startServer(t, addr, "tokenB", nbDir)
	do(t, ctx, "the tab says its token was refused",
		chromedp.WaitVisible(chromedp.CSS("#serverbanner")),
	)
	msg := text(t, ctx, "#serverbanner")
	if !strings.Contains(msg, "token") || !strings.Contains(msg, "cachebook serve") {
		t.Errorf("banner %q does not say what happened and what to do", msg)
	}
	t.Logf("banner: %s", msg)
	open(base + "/?token=tokenB")
	runQuery("a cell runs at the new URL")
}
