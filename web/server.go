// Package web is cachebook's HTTP server: the websocket kernel endpoint
// speaking cachebook-kernel/1 (docs/protocol.md), REST endpoints for
// lessons and notebooks, the embedded browser UI, and /metrics.
//
// Security follows Jupyter Server: a random token (header, query or
// cookie), an Origin check on the websocket and REST requests, and a Host
// check against DNS rebinding when bound to loopback.
package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"cachebook/kernel"
	"cachebook/notebook"
)

// Config configures a Server.
type Config struct {
	// Token is the secret clients must present; empty with NoToken unset
	// means a random one is generated (see Server.Token).
	Token   string
	NoToken bool
	// Loopback says the server listens on loopback addresses only; it
	// enables the Host check and is required for NoToken.
	Loopback bool
	// AllowOrigins lists extra origins (scheme://host:port) allowed to
	// open the websocket and call the REST API.
	AllowOrigins []string
	// Kernel configures the server's kernel sessions.
	Kernel kernel.ManagerConfig
	// Static holds the UI assets served at / (nil: a placeholder page).
	Static fs.FS
	// Lessons and Notebooks back the lesson and notebook requests (nil:
	// those requests fail with "Unavailable").
	Lessons   Lessons
	Notebooks *NotebookDir
	// MaxMessageBytes is the websocket read limit (default 4 MiB).
	MaxMessageBytes int
	// MaxFrameBytes caps every frame the server writes, counting all of
	// it (statement echo, columns, plan, rows); a larger output is
	// replaced by an OutputTooLarge error for its cell (default 8 MiB).
	MaxFrameBytes int
	// PingInterval and PongWait drive websocket keep-alive (30 s, 60 s).
	PingInterval time.Duration
	PongWait     time.Duration
	// UnauthIdleTimeout closes a keep-alive connection that has carried
	// no authenticated request after it sat idle that long (15 s); the
	// others keep IdleTimeout (2 min).
	UnauthIdleTimeout time.Duration
	// Now is the server's clock for its connection timeouts (nil:
	// time.Now); tests step it.
	Now func() time.Time
	// MetricsPublic serves /metrics without the token.
	MetricsPublic bool
	// Logger receives structured logs (nil: slog.Default()).
	Logger *slog.Logger
	// Class, if set, turns on classroom mode (class*.go): the token is
	// the teacher's, and learners join with the class's code.
	Class *ClassConfig
}

// DefaultMaxFrameBytes is the default cap on one frame the server writes.
// The kernel keeps result values under 1 MiB; the rest of a frame (names,
// types, plans, statement text, JSON escaping) should fit in the rest.
const DefaultMaxFrameBytes = 8 << 20

// Server is the notebook server. Create it with New, then call Serve.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mgr     *kernel.Manager
	metrics *metrics
	mux     *http.ServeMux
	handler http.Handler
	up      websocket.Upgrader
	started time.Time
	// instance identifies this run of the server; the welcome carries it
	// so that a tab can tell a restart from a reconnect.
	instance string

	// connWG counts the websocket connections being served; once closing
	// is set (under closeMu) no new one is counted, so that waiting for
	// them cannot race with a connection that arrives meanwhile.
	connWG  sync.WaitGroup
	closeMu sync.Mutex
	closing bool
	gz      gzipCache
	// class is the classroom state (nil without Config.Class).
	class *class
	// conns closes idle unauthenticated connections (Serve).
	conns *connTracker
}

// New returns a server. It fails for NoToken on a non-loopback server and
// when the kernel cannot start.
func New(cfg Config) (*Server, error) {
	if cfg.NoToken && !cfg.Loopback {
		return nil, errors.New("web: --no-token is only allowed when listening on a loopback address")
	}
	if cfg.NoToken && cfg.Class != nil {
		return nil, errors.New("web: a class needs a token (the teacher's); --no-token would make everyone the teacher")
	}
	if !cfg.NoToken && cfg.Token == "" {
		cfg.Token = NewToken()
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 4 << 20
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.PongWait <= 0 {
		cfg.PongWait = 2 * cfg.PingInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.UnauthIdleTimeout <= 0 {
		cfg.UnauthIdleTimeout = DefaultUnauthIdleTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, started: time.Now(), instance: kernel.NewID(),
		conns: newConnTracker(cfg.UnauthIdleTimeout, cfg.Now)}
	s.metrics = newMetrics(prometheus.NewRegistry(), func() *kernel.Manager { return s.mgr }, func() float64 {
		return float64(s.metrics.connections.Load())
	})
	kc := cfg.Kernel
	if kc.Logger == nil {
		kc.Logger = cfg.Logger
	}
	kc.Executor.Limits.MaxMessageBytes = cfg.MaxMessageBytes
	prev := kc.OnCellDone
	kc.OnCellDone = func(kind, status string, d time.Duration) {
		s.metrics.observeCell(kind, status, d)
		if prev != nil {
			prev(kind, status, d)
		}
	}
	if cfg.Class != nil {
		root := ""
		if cfg.Notebooks != nil {
			root = cfg.Notebooks.Root
		}
		s.class = newClass(*cfg.Class, root)
		prevTap := kc.OnBroadcast
		kc.OnBroadcast = func(session string, frame []byte) {
			s.class.tap(session, frame)
			if prevTap != nil {
				prevTap(session, frame)
			}
		}
		if cfg.Class.Share >= 0 && kc.Shared == nil {
			kc.Shared = &kernel.SharedMeasurements{Fresh: cfg.Class.Share, Now: cfg.Class.Now}
		}
		s.class.shared = kc.Shared
		prevConf := kc.Configure
		kc.Configure = func(session string, xc *kernel.Config) {
			if prevConf != nil {
				prevConf(session, xc)
			}
			if m := cfg.Class.CellMemory; m > 0 && (learnerOfSession(session) != "" || session == WarmSession) &&
				(xc.Limits.CellMemory <= 0 || m < xc.Limits.CellMemory) {
				xc.Limits.CellMemory = m
			}
		}
	}
	mgr, err := kernel.NewManager(kc)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	s.mgr = mgr
	if s.class != nil {
		s.class.warm = newWarmer(s)
		go s.class.run()
		if s.class.warm != nil {
			s.class.warm.start()
		}
	}
	s.up = websocket.Upgrader{
		ReadBufferSize:  16 << 10,
		WriteBufferSize: 16 << 10,
		// The Origin check runs before Upgrade (guard); this one keeps
		// gorilla's own check consistent with ours.
		CheckOrigin: s.originAllowed,
	}
	if cfg.Notebooks != nil {
		removed, err := cfg.Notebooks.CleanTemp()
		if err != nil {
			s.log.Warn("cleaning temporary files of interrupted saves", "err", err)
		}
		if len(removed) > 0 {
			s.log.Info("removed temporary files of interrupted saves", "files", removed)
		}
	}
	s.routes()
	return s, nil
}

// Token returns the token clients must present ("" with NoToken).
func (s *Server) Token() string {
	if s.cfg.NoToken {
		return ""
	}
	return s.cfg.Token
}

// Instance returns the id of this run of the server, which the welcome of
// every connection carries as server_instance.
func (s *Server) Instance() string { return s.instance }

// Manager returns the server's kernel sessions.
func (s *Server) Manager() *kernel.Manager { return s.mgr }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// URL returns the ready-to-open URL of the UI for a listener address.
func (s *Server) URL(addr net.Addr) string {
	host := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port))
	}
	u := "http://" + host + "/"
	if t := s.Token(); t != "" {
		u += "?token=" + t
	}
	return u
}

// Serve serves HTTP on ln until ctx is done, then shuts down gracefully:
// it stops accepting, closes every kernel session (running cells are
// cancelled, websockets get close code 1001) and waits up to 10 s.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       s.conns.connContext,
		ConnState:         s.conns.connState,
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go s.conns.run(sweepCtx)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "protocol", kernel.Protocol, "token", s.Token() != "")
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.log.Info("shutting down")
	if s.class != nil {
		s.class.stop() // ends the event streams Shutdown would wait for
	}
	serr := hs.Shutdown(sctx)
	merr := s.mgr.Close(sctx)
	s.waitConns()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, serr, merr)
}

// Close ends every kernel session without an HTTP server (for handlers
// served by other means, e.g. httptest).
func (s *Server) Close(ctx context.Context) error {
	if s.class != nil {
		s.class.stop()
	}
	err := s.mgr.Close(ctx)
	s.waitConns()
	return err
}

// enterConn counts a websocket connection about to be served, or reports
// false once the server is closing.
func (s *Server) enterConn() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closing {
		return false
	}
	s.connWG.Add(1)
	return true
}

// waitConns stops counting new connections and waits for those being
// served to end.
func (s *Server) waitConns() {
	s.closeMu.Lock()
	s.closing = true
	s.closeMu.Unlock()
	s.connWG.Wait()
}

func (s *Server) routes() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/kernel", s.handleKernel)
	mux.HandleFunc("GET /api/status", s.api(s.handleStatus))
	mux.HandleFunc("GET /api/lessons", s.api(s.handleLessonList))
	mux.HandleFunc("GET /api/lessons/{id}", s.api(s.handleLessonOpen))
	mux.HandleFunc("GET /api/notebooks", s.api(s.handleNotebookList))
	mux.HandleFunc("GET /api/notebooks/{path...}", s.api(s.handleNotebookOpen))
	mux.HandleFunc("PUT /api/notebooks/{path...}", s.api(s.handleNotebookSave))
	mux.HandleFunc("POST /api/export", s.handleExport)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("/", s.handleStatic)
	if s.class != nil {
		s.classRoutes(mux)
	}
	s.mux = mux
	s.handler = securityHeaders(mux)
}

// ContentSecurityPolicy is sent with every response. Script runs only from
// this server's own files (no inline script, no eval; WebAssembly may
// compile), the page talks only to its own origin, and no other site may
// frame it. Inline styles stay allowed: CodeMirror and uPlot set them, and
// a style cannot run script.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; " +
	"worker-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries: the CSP, the
// legacy frame ban for browsers without frame-ancestors, no Referer (the
// page URL may still hold the token when a link is followed) and no MIME
// sniffing.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// api wraps a JSON REST handler with the guards and error replies.
func (s *Server) api(h func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.guard(w, r, true) {
			return
		}
		v, err := h(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(statusOf(err))
			v = errorReply(err)
		}
		_ = json.NewEncoder(w).Encode(v)
	}
}

func (s *Server) handleStatus(r *http.Request) (any, error) {
	st := s.mgr.Stats()
	return map[string]any{
		"protocol": kernel.Protocol, "sessions": st.Sessions, "connections": s.metrics.connections.Load(),
		"running": st.Running, "queued": st.Queued, "max_heavy": s.mgr.Scheduler().Limit(),
		"cell_kinds": s.mgr.Registry().Kinds(), "started": s.started.UTC().Format(time.RFC3339),
		"server_instance": s.instance,
	}, nil
}

func (s *Server) handleLessonList(r *http.Request) (any, error) { return s.lessonList() }
func (s *Server) handleLessonOpen(r *http.Request) (any, error) {
	return s.lessonOpen(r.PathValue("id"))
}
func (s *Server) handleNotebookList(r *http.Request) (any, error) {
	return s.notebookList(s.notebooksFor(s.identify(r)))
}
func (s *Server) handleNotebookOpen(r *http.Request) (any, error) {
	return s.notebookOpen(s.notebooksFor(s.identify(r)), r.PathValue("path"))
}

func (s *Server) handleNotebookSave(r *http.Request) (any, error) {
	var d Doc
	body := http.MaxBytesReader(nil, r.Body, int64(s.cfg.MaxMessageBytes))
	if err := json.NewDecoder(body).Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: notebook JSON: %v", errBadRequest, err)
	}
	return s.notebookSave(s.notebooksFor(s.identify(r)), r.PathValue("path"), &d)
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, !s.cfg.MetricsPublic) {
		return
	}
	if !s.cfg.MetricsPublic && s.identify(r).role != roleTeacher {
		s.refuse(w, r, http.StatusForbidden, "role", "metrics are the teacher's")
		return
	}
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// handleStatic serves the UI. The page itself needs the token (so that
// its cookie is set); the other assets are public code. The path is
// cleaned before anything is decided, so that "/%2e/", "/%2e%2e/" or
// "/dist/..%2f" are the page (and need the token) rather than a way
// around it; directories are not listed.
func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	isPage := name == "" || name == "index.html"
	if !s.guard(w, r, false) {
		return
	}
	if isPage && !s.authorized(w, r) {
		s.metrics.rejected.WithLabelValues("token").Inc()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, loginPage)
		return
	}
	if s.cfg.Static == nil {
		if !isPage {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, placeholderPage)
		return
	}
	if isPage {
		b, err := fs.ReadFile(s.cfg.Static, "index.html")
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if s.class != nil {
			// class.js asks /api/class/me only on a class server's page.
			b = bytes.Replace(b, []byte("<body>"), []byte(`<body data-class="1">`), 1)
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method != http.MethodHead {
			_, _ = w.Write(b)
		}
		return
	}
	st, err := fs.Stat(s.cfg.Static, name)
	if err != nil || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	if s.gz.serveGzipped(w, r, s.cfg.Static, name) {
		return
	}
	f, err := s.cfg.Static.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		http.Error(w, "asset not seekable", http.StatusInternalServerError)
		return
	}
	http.ServeContent(w, r, name, st.ModTime(), rs)
}

const loginPage = `<!doctype html><meta charset="utf-8"><title>cachebook: token needed</title>
<body style="font-family:sans-serif;max-width:40em;margin:3em auto">
<h1>cachebook</h1><p>This server needs its token. Open the URL that <code>cachebook serve</code>
printed when it started (it ends in <code>?token=…</code>).</p></body>`

const placeholderPage = `<!doctype html><meta charset="utf-8"><title>cachebook</title>
<body style="font-family:sans-serif;max-width:40em;margin:3em auto">
<h1>cachebook</h1><p>The kernel is running (websocket at <code>/api/kernel</code>, protocol
cachebook-kernel/1) but this binary was built without the browser UI assets.</p></body>`

// classify maps an error to a reply ename.
func classify(err error) (ename, evalue string) {
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, fs.ErrNotExist):
		return "NotFound", err.Error()
	case errors.Is(err, errBadRequest):
		return "BadRequest", err.Error()
	case errors.Is(err, errUnavailable):
		return "Unavailable", err.Error()
	case errors.Is(err, errForbidden):
		return "Forbidden", err.Error()
	case errors.Is(err, errTooMany):
		return "TooMany", err.Error()
	}
	return "IOError", err.Error()
}

func errorReply(err error) map[string]any {
	ename, evalue := classify(err)
	return map[string]any{"status": kernel.StatusError, "ename": ename, "evalue": evalue}
}

var errUnavailable = errors.New("unavailable")

func (s *Server) lessonList() (any, error) {
	if s.cfg.Lessons == nil {
		return nil, fmt.Errorf("%w: this server has no lessons", errUnavailable)
	}
	l, err := s.cfg.Lessons.List()
	if err != nil {
		return nil, err
	}
	if l == nil {
		l = []LessonInfo{}
	}
	return map[string]any{"status": kernel.StatusOK, "lessons": l}, nil
}

func (s *Server) lessonOpen(id string) (any, error) {
	if s.cfg.Lessons == nil {
		return nil, fmt.Errorf("%w: this server has no lessons", errUnavailable)
	}
	if id == "" {
		return nil, fmt.Errorf("%w: lesson id is missing", errBadRequest)
	}
	nb, err := s.cfg.Lessons.Open(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotFound, err)
	}
	d := FromNotebook("", nb)
	return map[string]any{"status": kernel.StatusOK, "notebook": d}, nil
}

func (s *Server) notebookList(nd *NotebookDir) (any, error) {
	if nd == nil {
		return nil, fmt.Errorf("%w: no --notebooks directory", errUnavailable)
	}
	l, err := nd.List()
	if err != nil {
		return nil, err
	}
	return map[string]any{"status": kernel.StatusOK, "notebooks": l}, nil
}

func (s *Server) notebookOpen(nd *NotebookDir, p string) (any, error) {
	if nd == nil {
		return nil, fmt.Errorf("%w: no --notebooks directory", errUnavailable)
	}
	nb, err := nd.Open(p)
	if err != nil {
		return nil, err
	}
	return map[string]any{"status": kernel.StatusOK, "notebook": FromNotebook(p, nb)}, nil
}

func (s *Server) notebookSave(nd *NotebookDir, p string, d *Doc) (any, error) {
	if nd == nil {
		return nil, fmt.Errorf("%w: no --notebooks directory", errUnavailable)
	}
	if len(d.Cells) > 10000 {
		return nil, fmt.Errorf("%w: too many cells", errBadRequest)
	}
	nb, err := ToNotebook(d)
	if err != nil {
		return nil, err
	}
	if len(nb.Markdown()) > notebook.MaxSize {
		return nil, fmt.Errorf("%w: notebook larger than %d bytes", errBadRequest, notebook.MaxSize)
	}
	info, err := nd.Save(p, nb)
	if err != nil {
		return nil, err
	}
	s.log.Info("notebook saved", "path", p, "cells", len(nb.Cells))
	return map[string]any{"status": kernel.StatusOK, "path": info.Path, "modified": info.Modified}, nil
}
