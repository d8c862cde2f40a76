package web

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"cachebook/notebook"
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

// TestNotebookDirSymlinks plants symlinks inside --notebooks that lead out
// of it (a directory and a file): open, save and list must not read or
// write through them, while a symlinked directory that stays inside works.
func TestNotebookDirSymlinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := "# secret\n\nnot yours\n"
	if err := os.WriteFile(filepath.Join(outside, "s.md"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{outside, "out"}, {filepath.Join(outside, "s.md"), "file.md"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Skip("no symlinks here:", err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	nd := &NotebookDir{Root: dir}
	nb, err := notebook.Parse([]byte("# mine\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"out/s.md", "file.md"} {
		if got, err := nd.Open(p); err == nil {
			t.Errorf("open %s read outside the directory: %q", p, got.Cells[0].Source)
		}
	}
	for _, p := range []string{"out/new.md", "out/s.md"} {
		if _, err := nd.Save(p, nb); err == nil {
			t.Errorf("save %s wrote outside the directory", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "s.md")); string(b) != secret {
		t.Errorf("the file outside was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.md")); err == nil {
		t.Error("a file was created outside the directory")
	}
	if _, err := nd.Save("alias/in.md", nb); err != nil {
		t.Errorf("save through a symlink that stays inside: %v", err)
	}
	if _, err := nd.Open("alias/in.md"); err != nil {
		t.Errorf("open through a symlink that stays inside: %v", err)
	}
	list, err := nd.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if strings.HasPrefix(l.Path, "out/") || l.Path == "file.md" {
			t.Errorf("list shows %s from outside", l.Path)
		}
	}
}

// TestStartCleansTempFiles starts a server over a notebook directory
// holding the temporary file of an interrupted save: it is gone after
// New, the notebook beside it is not.
func TestStartCleansTempFiles(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".cachebook-save-00112233445566ff.tmp")
	for _, p := range []string{tmp, filepath.Join(dir, "a.md")} {
		if err := os.WriteFile(p, []byte("# half a save"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	newTestServer(t, Config{Notebooks: &NotebookDir{Root: dir}})
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.md")); err != nil {
		t.Error(err)
	}
}

// TestLongNotebookNames saves names of 234 to 255 bytes, which once
// passed validation and then always failed.
func TestLongNotebookNames(t *testing.T) {
	nd := &NotebookDir{Root: t.TempDir()}
	nb, _ := notebook.Parse([]byte("# long\n"))
	for _, n := range []int{234, 255} {
		p := strings.Repeat("x", n-3) + ".md"
		if _, err := nd.Save(p, nb); err != nil {
			t.Errorf("%d bytes: %v", n, err)
		}
		if _, err := nd.Open(p); err != nil {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
	if _, err := nd.Save(strings.Repeat("x", 253)+".md", nb); err == nil {
		t.Error("a 256-byte name was accepted")
	}
}

// TestAssetsRevalidate checks that assets carry an ETag and answer a
// reload's If-None-Match with 304, plain and gzipped, and that the UI
// bundle is served gzipped.
func TestAssetsRevalidate(t *testing.T) {
	js := []byte(strings.Repeat("console.log('cachebook');\n", 400))
	ts := newTestServer(t, Config{Static: fstest.MapFS{"index.html": {Data: []byte("<html>")}, "dist/app.js": {Data: js}, "dist/small.css": {Data: []byte("a{}")}}})
	get := func(p, enc, inm string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.ts.URL+p, nil)
		req.Header.Set("Accept-Encoding", enc)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct{ path, enc, wantEnc string }{
		{"/dist/app.js", "gzip", "gzip"},
		{"/dist/app.js", "", ""},
		{"/dist/small.css", "gzip", ""},
	} {
		first := get(tc.path, tc.enc, "")
		etag := first.Header.Get("ETag")
		if first.StatusCode != 200 || etag == "" || first.Header.Get("Content-Encoding") != tc.wantEnc {
			t.Fatalf("%s (%q): %d, ETag %q, encoding %q", tc.path, tc.enc, first.StatusCode, etag, first.Header.Get("Content-Encoding"))
		}
		if again := get(tc.path, tc.enc, etag); again.StatusCode != http.StatusNotModified {
			t.Errorf("%s (%q) with If-None-Match: %d, want 304", tc.path, tc.enc, again.StatusCode)
		}
		if other := get(tc.path, tc.enc, `"stale"`); other.StatusCode != 200 {
			t.Errorf("%s (%q) with a stale ETag: %d", tc.path, tc.enc, other.StatusCode)
		}
	}
}
