package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
)

// TestStaticPathsNeedToken checks that every spelling of the page's path
// (percent-encoded dots, "..", doubled slashes) needs the token, that no
// directory is listed, and that the public assets are served without it.
func TestStaticPathsNeedToken(t *testing.T) {
	static := fstest.MapFS{
		"index.html":  {Data: []byte("<!doctype html><title>the page</title>")},
		"dist/app.js": {Data: []byte("console.log(1)")},
	}
	ts := newTestServer(t, Config{Static: static})
	tests := []struct {
		path string
		want int
		page bool // the body is the page
	}{
		{"/", 401, false},
		{"/index.html", 401, false},
		{"/%2e/", 401, false},
		{"/%2e%2e/", 401, false},
		{"/%2E", 401, false},
		{"/dist/..%2f", 401, false},
		{"/dist/%2e%2e/", 401, false},
		{"/dist/..%2findex.html", 401, false},
		{"//", 307, false},            // ServeMux redirects to "/"
		{"/./index.html", 307, false}, // ... and to "/index.html"
		{"/dist/", 404, false},
		{"/dist", 404, false},
		{"/dist/app.js", 200, false},
		{"/dist/%61pp.js", 200, false},
		{"/nope.js", 404, false},
		{"/?token=secret", 200, true},
		{"/%2e/?token=secret", 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			req, err := http.NewRequest("GET", ts.ts.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d; body %.80q", resp.StatusCode, tt.want, body)
			}
			if got := strings.Contains(string(body), "the page"); got != tt.page {
				t.Fatalf("body is the page: %v, want %v (%.80q)", got, tt.page, body)
			}
		})
	}
}

// TestSecurityHeaders checks the CSP and framing headers on the page, an
// asset, the login page, the API and an error.
func TestSecurityHeaders(t *testing.T) {
	static := fstest.MapFS{"index.html": {Data: []byte("<html>")}, "dist/app.js": {Data: []byte("1")}}
	ts := newTestServer(t, Config{Static: static})
	for _, p := range []string{"/?token=secret", "/", "/dist/app.js", "/api/status?token=secret", "/api/status", "/nope"} {
		resp, err := http.Get(ts.ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self' 'wasm-unsafe-eval'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") && !strings.Contains(csp, "style-src 'self' 'unsafe-inline'") || strings.Contains(csp, "script-src 'self' 'unsafe") {
			t.Errorf("%s: CSP allows inline script: %q", p, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", p, h)
		}
	}
}
