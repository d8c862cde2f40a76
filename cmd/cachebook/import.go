package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"cachebook/notebook"
)

const importUsage = `usage: cachebook import FILE.ipynb [--out FILE.md]

Converts a Jupyter notebook (nbformat 4) to a cachebook Markdown notebook.
Code cells exported by cachebook keep their kind; other code cells become
sql cells when the notebook's language is SQL, and fenced code blocks in the
prose otherwise. Without --out (or with --out -) the Markdown goes to
standard output.`

// cmdImport converts an .ipynb file to a Markdown notebook.
func cmdImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, importUsage); fs.PrintDefaults() }
	out := fs.String("out", "", "output .md file (default: standard output)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("want one FILE.ipynb argument, got %d\n%s", len(pos), importUsage)
	}
	st, err := os.Stat(pos[0])
	if err != nil {
		return err
	}
	if st.Size() > notebook.MaxSize {
		return fmt.Errorf("%s: %d bytes is larger than the %d byte limit", pos[0], st.Size(), notebook.MaxSize)
	}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	nb, err := notebook.ImportIpynb(data)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	return writeOutput(*out, nb.Markdown(), stdout)
}
