// Package lessons holds cachebook's built-in lessons: Markdown notebooks
// (see package notebook for the format) embedded in the binary.
//
// Each lesson carries its title, learning goal and position in its
// notebook metadata comment:
//
//	<!-- cachebook: {"notebook": {"title": "…", "goal": "…", "order": 1}} -->
//
// A cell that the lesson runs in order to fail (naive under a memory
// budget its table does not fit) names the error it fails with in its
// metadata, so that the tests that run every cell accept that error and
// no other:
//
//	<!-- cachebook: {"id": "naive-under-budget", "fails": "MemoryLimit"} -->
//
// Its reference run must show that error; on smaller data it may answer.
package lessons

import (
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"cachebook/notebook"
)

//go:embed *.md reference
var files embed.FS

// ExpectedError returns the name of the error cell c is meant to fail
// with (its "fails" metadata; see the package doc), or "".
func ExpectedError(c *notebook.Cell) string {
	s, _ := c.Meta["fails"].(string)
	return s
}

// Lesson describes one built-in lesson.
type Lesson struct {
	// Name is the file name without ".md", e.g. "01-latency". It is the
	// lesson's id in the CLI and the kernel protocol.
	Name  string `json:"id"`
	Title string `json:"title"`
	Goal  string `json:"summary"`
	Order int    `json:"order"`
}

// FS returns the lesson files (NAME.md at the root).
func FS() fs.FS { return files }

// List returns the lessons in teaching order.
func List() ([]Lesson, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("lessons: %w", err)
	}
	var out []Lesson
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), notebook.Ext)
		if !ok || e.IsDir() {
			continue
		}
		nb, err := Notebook(name)
		if err != nil {
			return nil, err
		}
		l := Lesson{Name: name, Title: nb.Title()}
		l.Goal, _ = nb.Meta["goal"].(string)
		if o, ok := nb.Meta["order"].(float64); ok {
			l.Order = int(o)
		}
		out = append(out, l)
	}
	slices.SortStableFunc(out, func(a, b Lesson) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// Source returns the Markdown of the lesson called name. Name may be the
// full name ("03-radix"), the name without its number ("radix"), or the
// file name ("03-radix.md").
func Source(name string) ([]byte, error) {
	file, err := resolve(name)
	if err != nil {
		return nil, err
	}
	b, err := fs.ReadFile(files, file)
	if err != nil {
		return nil, fmt.Errorf("lessons: %w", err)
	}
	return b, nil
}

// Notebook returns the parsed lesson called name (see Source).
func Notebook(name string) (*notebook.Notebook, error) {
	src, err := Source(name)
	if err != nil {
		return nil, err
	}
	nb, err := notebook.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("lessons: %s: %w", name, err)
	}
	return nb, nil
}

// resolve maps a lesson name to its file name.
func resolve(name string) (string, error) {
	base := strings.TrimSuffix(name, notebook.Ext)
	if base == "" || strings.ContainsAny(base, `/\`) || strings.HasPrefix(base, ".") {
		return "", fmt.Errorf("lessons: no lesson %q", name)
	}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return "", fmt.Errorf("lessons: %w", err)
	}
	var names []string
	for _, e := range entries {
		n, ok := strings.CutSuffix(e.Name(), notebook.Ext)
		if !ok {
			continue
		}
		names = append(names, n)
		if n == base {
			return e.Name(), nil
		}
		if _, short, ok := strings.Cut(n, "-"); ok && short == base {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("lessons: no lesson %q (have %s)", name, strings.Join(names, ", "))
}
