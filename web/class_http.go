package web

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"cachebook/kernel"
)

// LearnerCookieName is the cookie that carries a learner's token. It is
// HttpOnly: the page never sees it.
const LearnerCookieName = "cachebook_learner"

// classRoutes adds the classroom endpoints (docs/classroom.md).
func (s *Server) classRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /join", s.handleJoinPage)
	mux.HandleFunc("POST /api/class/join", s.handleJoin)
	mux.HandleFunc("GET /class", s.handleClassPage)
	mux.HandleFunc("GET /api/class", s.teacherAPI(func(r *http.Request) (any, error) { return s.class.snapshot(), nil }))
	mux.HandleFunc("GET /api/class/events", s.handleClassEvents)
	mux.HandleFunc("POST /api/class/push", s.teacherAPI(s.handlePush))
	mux.HandleFunc("POST /api/class/lock", s.teacherAPI(s.handleLock))
	mux.HandleFunc("DELETE /api/class/learners/{id}", s.teacherAPI(s.handleRemove))
	mux.HandleFunc("GET /api/class/me", s.api(func(r *http.Request) (any, error) {
		return s.class.state(s.identify(r).learner), nil
	}))
	mux.HandleFunc("GET /api/class/me/events", s.handleLearnerEvents)
	mux.HandleFunc("POST /api/class/me/own", s.api(s.handleOwn))
}

// ClassURLs returns the teacher's URL and the learners' join link for a
// listener address (classroom mode only; "" otherwise).
func (s *Server) ClassURLs(addr net.Addr) (teacher, join, code string) {
	if s.class == nil {
		return "", "", ""
	}
	base := s.URL(addr) // http://host/?token=T
	u, err := url.Parse(base)
	if err != nil {
		return "", "", ""
	}
	q := u.RawQuery
	u.RawQuery = ""
	u.Path = "/class"
	teacher = u.String()
	if q != "" {
		teacher += "?" + q
	}
	u.Path = "/join"
	u.RawQuery = url.Values{"code": {s.class.cfg.Code}}.Encode()
	return teacher, u.String(), s.class.cfg.Code
}

// identify returns who sent r: the teacher (the server's token), a
// learner (its token, normally in its cookie) or nobody.
func (s *Server) identify(r *http.Request) identity {
	who := s.who(r)
	if who.role != roleNone {
		markAuthed(r)
	}
	return who
}

func (s *Server) who(r *http.Request) identity {
	if s.cfg.NoToken {
		return identity{role: roleTeacher}
	}
	tok, _ := tokenFrom(r)
	if tok != "" && constantEq(tok, s.cfg.Token) {
		return identity{role: roleTeacher}
	}
	if s.class == nil {
		return identity{}
	}
	if tok != "" {
		if l := s.class.byTok(tok); l != nil {
			return identity{role: roleLearner, learner: l}
		}
	}
	if c, err := r.Cookie(LearnerCookieName); err == nil && c.Value != "" {
		if l := s.class.byTok(c.Value); l != nil {
			return identity{role: roleLearner, learner: l}
		}
	}
	return identity{}
}

// removedLearner reports whether r carries the token of a learner the
// teacher removed.
func (s *Server) removedLearner(r *http.Request) bool {
	if s.class == nil {
		return false
	}
	if tok, _ := tokenFrom(r); s.class.wasRemoved(tok) {
		return true
	}
	c, err := r.Cookie(LearnerCookieName)
	return err == nil && s.class.wasRemoved(c.Value)
}

// notebooksFor is the notebook folder of who: the server's for the
// teacher, the learner's own for a learner.
func (s *Server) notebooksFor(who identity) *NotebookDir {
	if who.role == roleLearner {
		return s.class.learnerDir(who.learner)
	}
	return s.cfg.Notebooks
}

// teacherAPI is api for the teacher's endpoints: a learner is refused
// with 403.
func (s *Server) teacherAPI(h func(r *http.Request) (any, error)) http.HandlerFunc {
	return s.api(func(r *http.Request) (any, error) {
		if s.identify(r).role != roleTeacher {
			return nil, fmt.Errorf("%w: the teacher's endpoint", errForbidden)
		}
		return h(r)
	})
}

func decodeBody(r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10)).Decode(v); err != nil {
		return fmt.Errorf("%w: request JSON: %v", errBadRequest, err)
	}
	return nil
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, false) {
		return
	}
	// An unauthenticated body may not trickle in for ever.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(10 * time.Second))
	var req struct {
		Code string `json:"code"`
		Name string `json:"name"`
	}
	err := decodeBody(r, &req)
	var l *learner
	if err == nil {
		l, err = s.class.join(addrKey(r), req.Code, req.Name)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		s.metrics.rejected.WithLabelValues("join").Inc()
		if d := retryAfter(err); d > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(seconds(d), 10))
		}
		w.WriteHeader(statusOf(err))
		_ = json.NewEncoder(w).Encode(errorReply(err))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: LearnerCookieName, Value: l.token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	s.log.Info("learner joined", "class", s.class.cfg.Name, "learner", l.ID, "name", l.Name)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": kernel.StatusOK, "id": l.ID, "name": l.Name, "class": s.class.cfg.Name})
}

func (s *Server) handlePush(r *http.Request) (any, error) {
	var req struct {
		Lesson string `json:"lesson"`
		Cell   string `json:"cell"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Lesson == "" && req.Cell == "" {
		return nil, fmt.Errorf("%w: push a lesson, a cell or both", errBadRequest)
	}
	push := map[string]any{"lesson": req.Lesson, "cell": req.Cell, "at": time.Now().UTC().Format(time.RFC3339)}
	s.class.mu.Lock()
	s.class.push = push
	s.class.dirty = true
	s.class.mu.Unlock()
	s.class.sendLearners(nil, eventJSON("push", push))
	if s.class.warm != nil {
		s.class.warm.push(req.Lesson)
	}
	return map[string]any{"status": kernel.StatusOK, "push": push}, nil
}

func (s *Server) handleLock(r *http.Request) (any, error) {
	var req struct {
		Cell   string `json:"cell"`
		Locked bool   `json:"locked"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Cell == "" || len(req.Cell) > 128 {
		return nil, fmt.Errorf("%w: a cell id is needed", errBadRequest)
	}
	s.class.setLock(req.Cell, req.Locked)
	return map[string]any{"status": kernel.StatusOK, "cell": req.Cell, "locked": req.Locked}, nil
}

func (s *Server) handleRemove(r *http.Request) (any, error) {
	id := r.PathValue("id")
	sessions, err := s.class.remove(id)
	if err != nil {
		return nil, err
	}
	s.stopSessions(sessions, "learner removed")
	s.log.Info("learner removed", "class", s.class.cfg.Name, "learner", id, "sessions", len(sessions))
	return map[string]any{"status": kernel.StatusOK, "removed": id, "sessions": len(sessions)}, nil
}

// stopSessions shuts the kernel sessions ids down (those still live).
func (s *Server) stopSessions(ids []string, why string) {
	for _, sid := range ids {
		if k, ok := s.mgr.Kernel(sid); ok {
			m := kernel.NewMessage(kernel.ChannelControl, kernel.MsgShutdownRequest, "", kernel.Header{MsgID: kernel.NewID()},
				kernel.ShutdownRequest{Restart: false})
			if err := k.Handle(nil, &m); err != nil {
				s.log.Warn("stopping a session", "session", sid, "why", why, "err", err)
			} else {
				s.log.Info("session stopped", "session", sid, "why", why)
			}
		}
	}
}

// handleClassEvents streams the class view's snapshots (server-sent
// events) to the teacher.
func (s *Server) handleClassEvents(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, true) {
		return
	}
	if s.identify(r).role != roleTeacher {
		s.refuse(w, r, http.StatusForbidden, "role", "the teacher's endpoint")
		return
	}
	s.serveEvents(w, r, nil, s.class.snapshotJSON())
}

// handleLearnerEvents streams a learner's class events: the teacher's
// pushes, locks and the projector demo's frames.
func (s *Server) handleLearnerEvents(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, true) {
		return
	}
	who := s.identify(r)
	if who.role != roleLearner {
		s.refuse(w, r, http.StatusForbidden, "role", "the learners' event stream")
		return
	}
	s.serveEvents(w, r, who.learner, eventJSON("state", s.class.state(who.learner)))
}

// serveEvents writes first and then every event of a new stream of l (nil:
// the teacher's) as server-sent events, until the client goes, the stream
// is closed (the learner was removed, the server stops) or the server
// shuts down; a comment every 20 s keeps proxies from closing it.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, l *learner, first []byte) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, err := s.class.subscribe(l)
	if err != nil {
		s.refuse(w, r, statusOf(err), "class", err.Error())
		return
	}
	defer s.class.unsubscribe(l, ch)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	write := func(ev []byte) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", ev); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if !write(first) {
		return
	}
	ping := time.NewTicker(20 * time.Second)
	defer ping.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok || !write(ev) {
				return
			}
		case <-ping.C:
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// statusOf is the HTTP status of an error reply.
func statusOf(err error) int {
	switch ename, _ := classify(err); ename {
	case "NotFound":
		return http.StatusNotFound
	case "BadRequest":
		return http.StatusBadRequest
	case "Unavailable":
		return http.StatusServiceUnavailable
	case "Forbidden":
		return http.StatusForbidden
	case "TooMany":
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

func (s *Server) handleJoinPage(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, false) {
		return
	}
	s.page(w, r, "join")
}

func (s *Server) handleClassPage(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, false) {
		return
	}
	switch s.identify(r).role {
	case roleNone:
		s.metrics.rejected.WithLabelValues("token").Inc()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, loginPage)
		return
	case roleLearner:
		s.refuse(w, r, http.StatusForbidden, "role", "the class view is the teacher's")
		return
	}
	s.authorized(w, r) // sets the teacher's cookie when the token came in the URL
	s.page(w, r, "class")
}

// page serves the class page or the join page: the same stylesheet as the
// notebook and dist/class.js, which reads data-page.
func (s *Server) page(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	title := "cachebook: join " + s.class.cfg.Name
	if name == "class" {
		title = "cachebook class: " + s.class.cfg.Name
	}
	fmt.Fprintf(w, classPage, html.EscapeString(title), name)
}

const classPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<link rel="stylesheet" href="/dist/app.css">
<link rel="stylesheet" href="/dist/class.css">
<link rel="icon" href="data:,">
</head>
<body data-page="%s">
<div id="class"><p style="font-family:sans-serif;padding:1rem">Loading…</p></div>
<noscript>cachebook needs JavaScript.</noscript>
<script type="module" src="/dist/class.js"></script>
</body>
</html>
`
