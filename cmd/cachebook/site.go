package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"cachebook/kernel"
	"cachebook/web"
	"cachebook/web/static"
)

const siteUsage = `usage: cachebook site --out DIR

Writes a self-contained static site into DIR: the notebook page, its
bundle, the WebAssembly kernel, every lesson with its reference outputs.
Any static host serves it — python3 -m http.server -d DIR, GitHub Pages —
with no cachebook process behind it: each lesson runs in the page's own
WebAssembly kernel, over a hits table generated in (and kept by) the
browser; notebooks are saved in the browser and download as .md or .ipynb.

DIR must be empty, absent, or a site written before (it is rewritten).`

// staticMarker is the tag that tells the page it has no server behind it
// (web/ui/src/main.js STATIC).
const staticMarker = `<meta name="cachebook-static" content="1">`

// cmdSite writes the static site.
func cmdSite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("site", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprintln(stderr, siteUsage); fset.PrintDefaults() }
	out := fset.String("out", "", "directory to write the site into")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fset.Arg(0), siteUsage)
	}
	if *out == "" {
		return fmt.Errorf("--out DIR is required\n%s", siteUsage)
	}
	n, err := writeSite(*out, static.FS(), web.BuiltinLessons())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d files, %d lessons\nserve it with any static server, e.g.\n  python3 -m http.server -d %s 8000\nand open http://localhost:8000/\n",
		*out, n.files, n.lessons, *out)
	return nil
}

// siteCount is what writeSite wrote.
type siteCount struct{ files, lessons int }

// siteAssets are the files of dist/ the page needs; the class view's
// bundle is left out (a class needs its server).
var siteAssets = []string{"app.js", "app.css", "worker.js", "wasm_exec.js", "cachebook.wasm"}

// lessonIDRE is what a lesson id may be to name a file of the site.
var lessonIDRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$`)

// writeSite writes the site from the page's assets and the lessons into
// dir.
func writeSite(dir string, assets fs.FS, ls web.Lessons) (siteCount, error) {
	var n siteCount
	if _, err := fs.Stat(assets, "dist/cachebook.wasm"); err != nil {
		return n, errors.New("site: this binary was built without cachebook.wasm: run make build (it runs make wasm first)")
	}
	if err := checkSiteDir(dir); err != nil {
		return n, err
	}
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("site: %w", err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("site: %w", err)
		}
		n.files++
		return nil
	}
	page, err := fs.ReadFile(assets, "index.html")
	if err != nil {
		return n, fmt.Errorf("site: the page: %w", err)
	}
	page, err = staticPage(page)
	if err != nil {
		return n, err
	}
	if err := write("index.html", page); err != nil {
		return n, err
	}
	for _, a := range siteAssets {
		b, err := fs.ReadFile(assets, path.Join("dist", a))
		if err != nil {
			return n, fmt.Errorf("site: %w", err)
		}
		if err := write("dist/"+a, b); err != nil {
			return n, err
		}
	}
	list, err := ls.List()
	if err != nil {
		return n, fmt.Errorf("site: lessons: %w", err)
	}
	if list == nil {
		list = []web.LessonInfo{}
	}
	for _, l := range list {
		if !lessonIDRE.MatchString(l.ID) {
			return n, fmt.Errorf("site: lesson id %q cannot name a file", l.ID)
		}
		nb, err := ls.Open(l.ID)
		if err != nil {
			return n, fmt.Errorf("site: lesson %s: %w", l.ID, err)
		}
		b, err := json.Marshal(map[string]any{"status": kernel.StatusOK, "notebook": web.FromNotebook("", nb)})
		if err != nil {
			return n, fmt.Errorf("site: lesson %s: %w", l.ID, err)
		}
		if err := write("lessons/"+l.ID+".json", b); err != nil {
			return n, err
		}
		n.lessons++
	}
	b, err := json.Marshal(map[string]any{"status": kernel.StatusOK, "lessons": list})
	if err != nil {
		return n, fmt.Errorf("site: %w", err)
	}
	if err := write("lessons/index.json", b); err != nil {
		return n, err
	}
	// GitHub Pages: serve the files as they are (no Jekyll).
	if err := write(".nojekyll", nil); err != nil {
		return n, err
	}
	return n, nil
}

// checkSiteDir refuses a directory that holds something other than a
// site written before, so that --out never overwrites a learner's files.
func checkSiteDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(ents) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("site: %w", err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil || !bytes.Contains(page, []byte(staticMarker)) {
		return fmt.Errorf("site: %s is not empty and holds no cachebook site: choose an empty or new directory", dir)
	}
	return nil
}

// siteCSP is the server's Content-Security-Policy as a meta tag, the
// second line of defence behind the page's sanitiser where no server sets
// the header; frame-ancestors only works as a header and is left out.
func siteCSP() string {
	var keep []string
	for _, d := range strings.Split(web.ContentSecurityPolicy, ";") {
		if d = strings.TrimSpace(d); d != "" && !strings.HasPrefix(d, "frame-ancestors") {
			keep = append(keep, d)
		}
	}
	return `<meta http-equiv="Content-Security-Policy" content="` + html.EscapeString(strings.Join(keep, "; ")) + `">`
}

// staticPage turns the server's page into the static site's: the marker
// that tells the page it has no server, without the class view (a class
// needs its server, and its script would ask it who the reader is).
func staticPage(page []byte) ([]byte, error) {
	s := string(page)
	const charset = `<meta charset="utf-8">`
	if !strings.Contains(s, charset) {
		return nil, errors.New("site: the page has no charset tag to put the static marker after")
	}
	s = strings.Replace(s, charset, charset+"\n"+staticMarker+"\n"+siteCSP(), 1)
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "dist/class.") {
			continue
		}
		keep = append(keep, line)
	}
	return []byte(strings.Join(keep, "\n")), nil
}
