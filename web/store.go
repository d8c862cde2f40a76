package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"cachebook/kernel"
	"cachebook/notebook"
)

// Doc is a notebook as the protocol carries it (docs/protocol.md §3.9).
type Doc = notebook.Doc

// DocCell is one cell of a Doc.
type DocCell = notebook.DocCell

// LessonInfo describes one lesson in a listing.
type LessonInfo struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Summary string `json:"summary,omitempty"`
}

// Lessons is where lessons come from (package cachebook/lessons).
type Lessons interface {
	List() ([]LessonInfo, error)
	Open(id string) (*notebook.Notebook, error)
}

// NotebookInfo describes one saved notebook in a listing.
type NotebookInfo struct {
	Path     string `json:"path"`
	Title    string `json:"title"`
	Modified string `json:"modified"`
	Size     int64  `json:"size"`
}

// errNotFound and errBadRequest classify store errors for replies.
var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
)

// FromNotebook converts a parsed notebook to a Doc, rendering prose to HTML.
func FromNotebook(p string, nb *notebook.Notebook) *Doc { return notebook.DocOf(p, nb) }

// ToNotebook converts a Doc the page sent to a notebook model for saving
// (errBadRequest when the document is at fault), and gives a result table
// without a text form the text the kernel would print, so that the saved
// Markdown reads well on its own.
func ToNotebook(d *Doc) (*notebook.Notebook, error) {
	nb, err := d.Notebook()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	for _, c := range nb.Cells {
		c.Outputs = withResultText(c.Outputs)
	}
	return nb, nil
}

// withResultText fills in the text of result tables that have none and
// drops results with nothing to keep.
func withResultText(outs []notebook.Output) []notebook.Output {
	var res []notebook.Output
	for _, o := range outs {
		if v, ok := o.Data[kernel.MIMEResult]; ok && o.Text == "" {
			var b kernel.ResultBundle
			if raw, err := json.Marshal(v); err == nil && json.Unmarshal(raw, &b) == nil {
				o.Text = strings.TrimSuffix(kernel.RenderText(&b), "\n")
			}
		}
		if o.Type == notebook.OutputResult && o.Text == "" && o.HTML == "" && len(o.Data) == 0 {
			continue // nothing to keep
		}
		res = append(res, o)
	}
	return res
}

// NotebookDir stores notebooks as Markdown files in a directory, one level
// of sub-directories deep ("name.md" or "dir/name.md"). Every access goes
// through os.Root: a symlink (to a file or to a directory) that leads out
// of Root is refused, for reading and for writing.
type NotebookDir struct {
	Root string
}

// open opens the notebook directory and, for a non-empty dir, its
// sub-directory dir (created first when create is set); closing the
// returned function closes both.
func (nd *NotebookDir) open(dir string, create bool) (*os.Root, func(), error) {
	root, err := os.OpenRoot(nd.Root)
	if err != nil {
		if create && errors.Is(err, fs.ErrNotExist) {
			if err = os.MkdirAll(nd.Root, 0o755); err == nil {
				root, err = os.OpenRoot(nd.Root)
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("notebooks: %w", err)
		}
	}
	if dir == "" {
		return root, func() { root.Close() }, nil
	}
	if create {
		if err := root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			root.Close()
			return nil, nil, fmt.Errorf("notebooks: %w", err)
		}
	}
	sub, err := root.OpenRoot(dir)
	root.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("notebooks: %w", err)
	}
	return sub, func() { sub.Close() }, nil
}

// CleanTemp removes the temporary files interrupted saves left behind
// (see notebook.CleanTemp) and returns their paths; a missing directory
// has none.
func (nd *NotebookDir) CleanTemp() ([]string, error) {
	root, err := os.OpenRoot(nd.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("notebooks: %w", err)
	}
	defer root.Close()
	return notebook.CleanTemp(root)
}

// splitPath validates a notebook path and splits it into its directory
// (relative, "" for the root) and file name.
func splitPath(p string) (dir, name string, err error) {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || !fs.ValidPath(p) {
		return "", "", fmt.Errorf("%w: invalid notebook path %q", errBadRequest, p)
	}
	dir, name = path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if strings.Contains(dir, "/") {
		return "", "", fmt.Errorf("%w: notebook path %q is more than one directory deep", errBadRequest, p)
	}
	if dir != "" {
		if err := notebook.ValidName(dir + notebook.Ext); err != nil {
			return "", "", fmt.Errorf("%w: invalid directory in %q", errBadRequest, p)
		}
	}
	if err := notebook.ValidName(name); err != nil {
		return "", "", fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return dir, name, nil
}

// List returns the notebooks of the directory, sorted by path.
func (nd *NotebookDir) List() ([]NotebookInfo, error) {
	var out []NotebookInfo
	root, err := os.OpenRoot(nd.Root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return []NotebookInfo{}, nil
		}
		return nil, fmt.Errorf("notebooks: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if d.IsDir() {
			if p != "." && (strings.Count(p, "/") > 0 || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		if _, _, err := splitPath(p); err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		title := ""
		if nb, err := nd.Open(p); err == nil {
			title = nb.Title()
		}
		out = append(out, NotebookInfo{Path: p, Title: title, Modified: info.ModTime().UTC().Format(time.RFC3339), Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("notebooks: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if out == nil {
		out = []NotebookInfo{}
	}
	return out, nil
}

// Open loads the notebook at p.
func (nd *NotebookDir) Open(p string) (*notebook.Notebook, error) {
	dir, name, err := splitPath(p)
	if err != nil {
		return nil, err
	}
	root, done, err := nd.open(dir, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no notebook %q", errNotFound, p)
		}
		return nil, err
	}
	defer done()
	nb, err := notebook.LoadRoot(root, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no notebook %q", errNotFound, p)
		}
		return nil, err
	}
	return nb, nil
}

// Save writes nb to p atomically, creating the sub-directory if needed.
func (nd *NotebookDir) Save(p string, nb *notebook.Notebook) (NotebookInfo, error) {
	dir, name, err := splitPath(p)
	if err != nil {
		return NotebookInfo{}, err
	}
	root, done, err := nd.open(dir, true)
	if err != nil {
		return NotebookInfo{}, err
	}
	defer done()
	if err := notebook.SaveRoot(root, name, nb); err != nil {
		return NotebookInfo{}, err
	}
	st, err := root.Stat(name)
	if err != nil {
		return NotebookInfo{}, fmt.Errorf("notebooks: %w", err)
	}
	return NotebookInfo{Path: p, Title: nb.Title(), Modified: st.ModTime().UTC().Format(time.RFC3339), Size: st.Size()}, nil
}
