package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CookieName is the name of the cookie that carries the token after the
// first authenticated request.
const CookieName = "cachebook_token"

// NewToken returns a random 32-byte token as 64 hex digits.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// IsLoopbackAddr reports whether a listen address (host:port) binds only
// loopback interfaces: localhost, 127.0.0.0/8 or ::1. An empty host (all
// interfaces) is not loopback.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// tokenFrom returns the token a request presents and where it came from:
// "header" (Authorization: token T), "query" (?token=T) or "cookie".
func tokenFrom(r *http.Request) (tok, source string) {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "token "); ok {
			return strings.TrimSpace(t), "header"
		}
		if t, ok := strings.CutPrefix(h, "Token "); ok {
			return strings.TrimSpace(t), "header"
		}
	}
	if t := r.URL.Query().Get("token"); t != "" {
		return t, "query"
	}
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		return c.Value, "cookie"
	}
	return "", ""
}

// authorized reports whether r presents the server's token (always true
// with --no-token). When the token came in the header or the query, the
// token cookie is set on w so later requests (the websocket, assets) carry
// it.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.NoToken {
		return true
	}
	tok, source := tokenFrom(r)
	if tok == "" || !constantEq(tok, s.cfg.Token) {
		// In classroom mode a learner's token is also good (class_http.go).
		return s.class != nil && s.identify(r).role == roleLearner
	}
	if source != "cookie" && w != nil {
		http.SetCookie(w, s.tokenCookie())
	}
	markAuthed(r)
	return true
}

// constantEq compares a presented token with the expected one in
// constant time.
func constantEq(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *Server) tokenCookie() *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: s.cfg.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode}
}

// hostAllowed implements the DNS-rebinding check: when the server listens
// on loopback only, the Host header must name localhost, 127.0.0.1 or
// [::1] (with any port).
func (s *Server) hostAllowed(r *http.Request) bool {
	if !s.cfg.Loopback {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// originAllowed implements the cross-origin check: a request without an
// Origin header (not from a browser page) passes; otherwise the origin's
// host:port must equal the Host header or the origin must be listed in
// --allow-origin.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	norm := strings.TrimSuffix(strings.ToLower(origin), "/")
	for _, a := range s.cfg.AllowOrigins {
		if a == "*" || strings.TrimSuffix(strings.ToLower(a), "/") == norm {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// guard runs the host, origin and token checks, answering the request with
// 403 or 401 when one fails. It returns whether the request may proceed.
func (s *Server) guard(w http.ResponseWriter, r *http.Request, needToken bool) bool {
	switch {
	case !s.hostAllowed(r):
		s.refuse(w, r, http.StatusForbidden, "host", "Host header not allowed for a loopback server")
		return false
	case !s.originAllowed(r):
		s.refuse(w, r, http.StatusForbidden, "origin", "cross-origin request blocked")
		return false
	case needToken && !s.authorized(w, r):
		msg := "missing or wrong token"
		if s.removedLearner(r) {
			msg = "the teacher removed you from the class"
		}
		s.refuse(w, r, http.StatusUnauthorized, "token", msg)
		return false
	}
	return true
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, reason, msg string) {
	s.metrics.rejected.WithLabelValues(reason).Inc()
	s.log.Warn("request refused", "reason", reason, "method", r.Method, "path", r.URL.Path,
		"remote", r.RemoteAddr, "host", r.Host, "origin", r.Header.Get("Origin"), "status", code)
	http.Error(w, msg, code)
}
