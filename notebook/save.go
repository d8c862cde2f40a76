package notebook

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ext is the file name extension of notebooks.
const Ext = ".md"

// ValidName reports whether name is acceptable as a notebook file name in a
// notebook directory: a single path element (no separators, no "." or
// ".."), not hidden, valid UTF-8 without control characters, at most 255
// bytes, ending in ".md" with something before it.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("notebook name is empty")
	case len(name) > 255:
		return fmt.Errorf("notebook name is %d bytes long, more than 255", len(name))
	case !utf8.ValidString(name):
		return fmt.Errorf("notebook name %q is not valid UTF-8", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("notebook name %q contains a path separator", name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("notebook name %q starts with a dot", name)
	case !strings.HasSuffix(name, Ext) || len(name) == len(Ext):
		return fmt.Errorf("notebook name %q must end in %s", name, Ext)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == ':' }):
		return fmt.Errorf("notebook name %q contains a control character or colon", name)
	case !fs.ValidPath(name):
		return fmt.Errorf("notebook name %q is not a valid path element", name)
	}
	return nil
}

// Load reads and parses the notebook name in dir. Name must pass ValidName;
// the file is opened through os.Root, so it cannot escape dir.
func Load(dir, name string) (*Notebook, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("notebook: open directory: %w", err)
	}
	defer root.Close()
	return LoadRoot(root, name)
}

// LoadRoot reads and parses the notebook name in root. Name must pass
// ValidName and name a regular file inside root (a symlink that leads out
// of root is refused by os.Root).
func LoadRoot(root *os.Root, name string) (*Notebook, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("notebook: %s is not a regular file", name)
	}
	if st.Size() > MaxSize {
		return nil, fmt.Errorf("notebook: %s is %d bytes, more than the %d byte limit", name, st.Size(), MaxSize)
	}
	src := make([]byte, st.Size())
	if _, err := io.ReadFull(f, src); err != nil {
		return nil, fmt.Errorf("notebook: read %s: %w", name, err)
	}
	nb, err := Parse(src)
	if err != nil {
		return nil, fmt.Errorf("notebook: %s: %w", name, err)
	}
	return nb, nil
}

// Save writes n as Markdown to dir/name atomically: the bytes go to a
// temporary file in the same directory, which is synced, renamed over name
// and followed by a sync of the directory. A failure at any step leaves the
// previous file untouched and removes the temporary file.
func Save(dir, name string, n *Notebook) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("notebook: save: open directory: %w", err)
	}
	defer root.Close()
	return saveFile(root, name, n.Markdown(), nil)
}

// SaveRoot is Save for a directory opened as an os.Root.
func SaveRoot(root *os.Root, name string, n *Notebook) error {
	return saveFile(root, name, n.Markdown(), nil)
}

// Temporary files of a save are named tempPrefix, 16 hex digits and
// tempSuffix: a fixed 31 bytes, so that every name ValidName accepts (up
// to 255 bytes) can be saved, and a name ValidName refuses (it starts with
// a dot), so a temporary file is never listed or opened as a notebook.
const (
	tempPrefix = ".cachebook-save-"
	tempSuffix = ".tmp"
)

// isTemp reports whether name is the temporary file of a save: this
// version's or that of earlier versions ("." + name + ".tmp-" + hex).
func isTemp(name string) bool {
	if strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix) {
		return true
	}
	if !strings.HasPrefix(name, ".") {
		return false
	}
	i := strings.LastIndex(name, Ext+".tmp-")
	return i > 0 && len(name)-(i+len(Ext)+len(".tmp-")) == 16
}

// CleanTemp removes the temporary files that interrupted saves (a crash,
// kill -9, power loss) left in root and in its sub-directories one level
// down, and returns their paths. Call it at start, before any save runs:
// a save in progress in another process would lose its temporary file.
func CleanTemp(root *os.Root) ([]string, error) {
	var removed []string
	var errs []error
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if d.IsDir() {
			if p != "." && strings.Contains(p, "/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !isTemp(d.Name()) {
			return nil
		}
		if err := root.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("notebook: remove stale %s: %w", p, err))
			return nil
		}
		removed = append(removed, p)
		return nil
	})
	return removed, errors.Join(append(errs, err)...)
}

// saveFile is Save's implementation; fail, if set, is called before each
// step and can inject an error (for tests).
func saveFile(root *os.Root, name string, data []byte, fail func(step string) error) error {
	if err := ValidName(name); err != nil {
		return err
	}
	step := func(s string) error {
		if fail != nil {
			return fail(s)
		}
		return nil
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := tempPrefix + hex.EncodeToString(rnd[:]) + tempSuffix
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("notebook: save %s: %w", name, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	half := len(data) / 2
	if _, err := f.Write(data[:half]); err != nil {
		return fmt.Errorf("notebook: save %s: write: %w", name, err)
	}
	if err := step("write"); err != nil {
		return fmt.Errorf("notebook: save %s: write: %w", name, err)
	}
	if _, err := f.Write(data[half:]); err != nil {
		return fmt.Errorf("notebook: save %s: write: %w", name, err)
	}
	if err := step("sync"); err != nil {
		return fmt.Errorf("notebook: save %s: sync: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("notebook: save %s: sync: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("notebook: save %s: close: %w", name, err)
	}
	if err := step("rename"); err != nil {
		return fmt.Errorf("notebook: save %s: rename: %w", name, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		return fmt.Errorf("notebook: save %s: rename: %w", name, err)
	}
	ok = true
	// Make the rename durable. A failure here does not undo the save.
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("notebook: save %s: sync directory: %w", name, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("notebook: save %s: sync directory: %w", name, err)
	}
	return nil
}
