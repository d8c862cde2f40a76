package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"cachebook/lessons"
	"cachebook/notebook"
)

const exportUsage = `usage: cachebook export NOTEBOOK --to ipynb|md [--out FILE] [--reference]

NOTEBOOK is a lesson name (see "cachebook lessons") or a path to a .md
notebook. --to ipynb writes Jupyter's nbformat 4.5; --to md writes the
notebook's Markdown. Without --out (or with --out -) the result goes to
standard output. --reference puts a lesson's reference outputs (a real run,
labelled with its machine) in its cells, for readers without a kernel.`

// cmdExport converts a notebook to .ipynb or Markdown.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, exportUsage); fs.PrintDefaults() }
	to := fs.String("to", "", "output format: ipynb or md")
	out := fs.String("out", "", "output file (default: standard output)")
	withRef := fs.Bool("reference", false, "include the lesson's reference outputs")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("want one NOTEBOOK argument, got %d\n%s", len(pos), exportUsage)
	}
	nb, err := loadNotebook(pos[0])
	if err != nil {
		return err
	}
	if *withRef {
		ref, err := lessons.LoadReference(pos[0])
		if err != nil {
			return err
		}
		if ref == nil {
			return fmt.Errorf("%s has no reference outputs", pos[0])
		}
		ref.Apply(nb)
	}
	var data []byte
	switch *to {
	case "ipynb":
		data, err = nb.Ipynb()
		if err != nil {
			return err
		}
	case "md", "markdown":
		data = nb.Markdown()
	case "":
		return fmt.Errorf("--to is required (ipynb or md)\n%s", exportUsage)
	default:
		return fmt.Errorf("unknown --to %q (want ipynb or md)", *to)
	}
	return writeOutput(*out, data, stdout)
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// loadNotebook reads a notebook given as a path to a Markdown file or as the
// name of a built-in lesson. An existing file wins over a lesson name.
func loadNotebook(arg string) (*notebook.Notebook, error) {
	if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
		if st.Size() > notebook.MaxSize {
			return nil, fmt.Errorf("%s: %d bytes is larger than the %d byte limit", arg, st.Size(), notebook.MaxSize)
		}
		src, err := os.ReadFile(arg)
		if err != nil {
			return nil, err
		}
		nb, err := notebook.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		return nb, nil
	}
	nb, err := lessons.Notebook(arg)
	if err != nil {
		if strings.HasSuffix(arg, notebook.Ext) || strings.ContainsRune(arg, filepath.Separator) {
			return nil, fmt.Errorf("%s: no such notebook file, and %w", arg, err)
		}
		return nil, err
	}
	return nb, nil
}

// writeOutput writes data to path atomically (a temporary file in the same
// directory, synced and renamed), or to stdout when path is "" or "-".
func writeOutput(path string, data []byte, stdout io.Writer) (err error) {
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
