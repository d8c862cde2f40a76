package web

import (
	"bytes"
	"compress/gzip"
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

// gzipCache holds gzipped copies of large static assets (the 20 MB
// WebAssembly engine shrinks to under 5 MB), made once on first request.
type gzipCache struct {
	mu    sync.Mutex
	files map[string][]byte
}

// serveGzipped answers a GET for a .wasm file with its gzipped copy when the
// client accepts gzip, and reports whether it did.
func (g *gzipCache) serveGzipped(w http.ResponseWriter, r *http.Request, fsys fs.FS, name string) bool {
	if !strings.HasSuffix(name, ".wasm") || !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		return false
	}
	g.mu.Lock()
	b, ok := g.files[name]
	if !ok {
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			g.mu.Unlock()
			return false
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		b = buf.Bytes()
		if g.files == nil {
			g.files = map[string][]byte{}
		}
		g.files[name] = b
	}
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/wasm")
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Vary", "Accept-Encoding")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
	return true
}
