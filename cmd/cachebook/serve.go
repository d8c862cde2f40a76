package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"cachebook/engine"
	"cachebook/engine/units"
	"cachebook/kernel"
	"cachebook/web"
	"cachebook/web/static"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8888", "listen address (host:port)")
	data := fs.String("data", "", "data directory (default $CACHEBOOK_DATA or ./data)")
	notebooks := fs.String("notebooks", "notebooks", "directory of saved notebooks")
	token := fs.String("token", "", "access token (default $CACHEBOOK_TOKEN, else a random one)")
	noToken := fs.Bool("no-token", false, "serve without a token (only on a loopback address)")
	allowOrigin := fs.String("allow-origin", "", "comma-separated extra origins allowed to connect, e.g. http://localhost:5173")
	maxHeavy := fs.Int("max-heavy", max(1, runtime.NumCPU()-1), "cells that may run at once across all sessions")
	cellTimeout := fs.Duration("cell-timeout", 5*time.Minute, "longest a cell may run")
	cellMemory := fs.String("cell-memory", units.FormatBytes(defaultCellMemory()),
		"memory one cell may use: the engine's limit for each query, and the cap measurement cells and experiments size their buffers against (default: a quarter of physical memory or the cgroup limit)")
	queryMemory := fs.String("query-memory", "", "memory limit of one query, when it should differ from --cell-memory")
	maxRows := fs.Int("max-rows", 1000, "result rows sent to the browser per statement (the total count is always shown)")
	maxMessage := fs.String("max-message", "4MiB", "largest websocket message accepted from a client")
	metricsPublic := fs.Bool("metrics-public", false, "serve /metrics without the token")
	className := fs.String("class", "", "classroom mode: serve the class NAME; prints the teacher's URL and the learners' join link and code (docs/classroom.md)")
	classCode := fs.String("class-code", "", "the learners' join code (default: a random 6-letter code)")
	learnerQueue := fs.Int("learner-queue", 3, "classroom mode: cells one learner may have queued or running at once")
	learnerSessions := fs.Int("learner-sessions", 3, "classroom mode: kernel sessions (tabs) one learner may have")
	learnerMemory := fs.String("learner-cell-memory", "", "classroom mode: memory one cell of a learner may use, when less than --cell-memory (measurement cells and experiments)")
	learnerTimeout := fs.Duration("learner-cell-timeout", 2*time.Minute, "classroom mode: longest a learner's cell may run")
	classPrepare := fs.Bool("class-prepare", true, "classroom mode: measure lesson 1's server measurements when the server starts, and keep the shared results fresh while learners are connected, in the background (never beside a learner's cell)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cachebook serve [--addr 127.0.0.1:8888] [--data DIR] [--notebooks DIR] [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	case "json":
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	default:
		return fmt.Errorf("unknown --log-format %q (want text or json)", *logFormat)
	}
	log := slog.New(handler)
	cmem, err := units.ParseBytes(*cellMemory)
	if err != nil {
		return fmt.Errorf("--cell-memory: %w", err)
	}
	qmem := cmem
	if *queryMemory != "" {
		if qmem, err = units.ParseBytes(*queryMemory); err != nil {
			return fmt.Errorf("--query-memory: %w", err)
		}
	}
	maxMsg, err := units.ParseBytes(*maxMessage)
	if err != nil || maxMsg < 1024 || maxMsg > 1<<30 {
		return fmt.Errorf("--max-message %q: want a size between 1KiB and 1GiB", *maxMessage)
	}
	if *maxHeavy < 1 {
		return errors.New("--max-heavy must be at least 1")
	}
	if *token == "" {
		*token = os.Getenv("CACHEBOOK_TOKEN")
	}
	var origins []string
	for _, o := range strings.Split(*allowOrigin, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}

	var class *web.ClassConfig
	if *className != "" {
		if *noToken {
			return errors.New("--class needs a token: it is the teacher's (drop --no-token)")
		}
		var lmem int64
		if *learnerMemory != "" {
			if lmem, err = units.ParseBytes(*learnerMemory); err != nil {
				return fmt.Errorf("--learner-cell-memory: %w", err)
			}
		}
		class = &web.ClassConfig{Name: *className, Code: *classCode, MaxQueued: *learnerQueue,
			MaxSessions: *learnerSessions, CellTimeout: min(*learnerTimeout, *cellTimeout), CellMemory: lmem, Prepare: *classPrepare}
	}

	dir := dataDir(*data)
	ex := executorConfig(dir, kernel.Limits{MaxRows: *maxRows, CellTimeout: *cellTimeout, QueryMemory: qmem, CellMemory: cmem}, log)

	srv, err := web.New(web.Config{
		Token:           *token,
		NoToken:         *noToken,
		Loopback:        web.IsLoopbackAddr(*addr),
		AllowOrigins:    origins,
		Kernel:          kernel.ManagerConfig{Executor: ex, Scheduler: kernel.NewScheduler(*maxHeavy), Logger: log},
		Static:          static.FS(),
		Lessons:         web.BuiltinLessons(),
		Notebooks:       &web.NotebookDir{Root: *notebooks},
		MaxMessageBytes: int(maxMsg),
		MetricsPublic:   *metricsPublic,
		Logger:          log,
		Class:           class,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("cachebook serve", "addr", ln.Addr().String(), "data", dir, "notebooks", *notebooks,
		"max_heavy", *maxHeavy, "cell_timeout", *cellTimeout, "cell_memory", cmem, "query_memory", qmem)
	if class != nil {
		teacher, join, code := srv.ClassURLs(ln.Addr())
		fmt.Fprintf(stdout, "cachebook is serving the class %q.\n\nTeacher (keep this URL to yourself; the class view, on the projector):\n\n    %s\n\n"+
			"Learners open this link (or %s/join and type the code):\n\n    %s\n\n    code: %s\n\n",
			class.Name, teacher, strings.TrimSuffix(strings.Split(join, "/join")[0], "/"), join, code)
	} else {
		fmt.Fprintf(stdout, "cachebook is running. Open this URL in a browser:\n\n    %s\n\n", srv.URL(ln.Addr()))
	}
	return srv.Serve(ctx, ln)
}

// executorConfig is the kernel configuration of a long-running kernel
// (cachebook serve, cachebook jupyter kernel) over the data directory dir:
// the engine opened under lim's query memory, or the reason it could not
// be (the kernel still runs lessons and measurement cells, and sql cells
// say why they fail), and measurement cells pinned to a reserved core
// where there is one.
func executorConfig(dir string, lim kernel.Limits, log *slog.Logger) kernel.Config {
	xc := kernel.Config{DataPath: dir, QueryMemory: lim.QueryMemory, Limits: lim, Logger: log}
	db, err := openEngine(engine.Options{DataDir: dir, QueryMemory: lim.QueryMemory, Cache: hostCacheSizes(), MaxThreads: runtime.NumCPU()})
	if err != nil {
		log.Warn("SQL engine unavailable; sql cells will fail", "data", dir, "err", err)
		xc.EngineUnavailable = err
	} else {
		xc.DB = db
	}
	if cpu, reason := kernel.ReservedCPU(); cpu >= 0 {
		xc.Pin, xc.PinCPU = true, cpu
		log.Info("measurement cells run alone, pinned to a reserved core", "cpu", cpu)
	} else {
		log.Info("measurement cells run alone, not pinned", "reason", reason)
	}
	return xc
}
