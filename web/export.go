package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
)

// handleExport converts the notebook the page sends (the same JSON as a
// save) into a download: POST /api/export?format=ipynb|md. The conversion is
// the notebook package's, whose .ipynb output is checked against the
// nbformat 4.5 schema in its tests.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, true) {
		return
	}
	fail := func(code int, err error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(errorReply(err))
	}
	format := r.URL.Query().Get("format")
	if format != "ipynb" && format != "md" {
		fail(http.StatusBadRequest, fmt.Errorf("%w: format must be ipynb or md, got %q", errBadRequest, format))
		return
	}
	var d Doc
	body := http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxMessageBytes))
	if err := json.NewDecoder(body).Decode(&d); err != nil {
		fail(http.StatusBadRequest, fmt.Errorf("%w: notebook JSON: %v", errBadRequest, err))
		return
	}
	nb, err := ToNotebook(&d)
	if err != nil {
		fail(http.StatusBadRequest, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	}
	name := strings.TrimSuffix(path.Base(d.Path), ".md")
	if name == "" || name == "." || name == "/" {
		name = "notebook"
	}
	var out []byte
	ctype := "text/markdown; charset=utf-8"
	if format == "ipynb" {
		if out, err = nb.Ipynb(); err != nil {
			fail(http.StatusInternalServerError, err)
			return
		}
		ctype = "application/x-ipynb+json"
	} else {
		out = nb.Markdown()
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+"."+format))
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(out)
}

// gzipCache holds what serving the static assets needs beyond the files:
// an ETag per asset (so that a reload revalidates with 304 instead of
// downloading the 20 MB WebAssembly engine again) and gzipped copies of the
// compressible ones (the engine shrinks to under 5 MB, the UI bundle to a
// third), made once on first request.
type gzipCache struct {
	mu    sync.Mutex
	files map[string]*asset
}

// asset is the cached form of one static file.
type asset struct {
	etag string // strong ETag of the plain bytes
	gz   []byte // gzipped bytes, nil for a file not worth compressing
}

// compressible lists the extensions served gzipped to clients that accept it.
var compressible = map[string]string{
	".wasm": "application/wasm",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// get returns the cached form of name, computing it on first use.
func (g *gzipCache) get(fsys fs.FS, name string) (*asset, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a, ok := g.files[name]; ok {
		return a, nil
	}
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	a := &asset{etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	if _, ok := compressible[path.Ext(name)]; ok && len(raw) > 1024 {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		a.gz = buf.Bytes()
	}
	if g.files == nil {
		g.files = map[string]*asset{}
	}
	g.files[name] = a
	return a, nil
}

// serveGzipped answers a GET for an asset with its ETag set (the caller's
// http.ServeContent then answers If-None-Match with 304) and, for a
// compressible file when the client accepts gzip, answers it with the
// gzipped copy itself; it reports whether it answered.
func (g *gzipCache) serveGzipped(w http.ResponseWriter, r *http.Request, fsys fs.FS, name string) bool {
	a, err := g.get(fsys, name)
	if err != nil {
		return false
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache") // keep it, but ask first
	h.Set("Vary", "Accept-Encoding")
	if a.gz == nil || !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("ETag", a.etag)
		return false
	}
	etag := strings.TrimSuffix(a.etag, `"`) + `-gz"`
	h.Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || strings.Contains(inm, etag)) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	h.Set("Content-Type", compressible[path.Ext(name)])
	h.Set("Content-Encoding", "gzip")
	h.Set("Content-Length", fmt.Sprint(len(a.gz)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.gz)
	}
	return true
}
