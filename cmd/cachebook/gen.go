package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cachebook/engine/gen"

	"golang.org/x/term"
)

// cmdGen writes DIR/hits.parquet: a ClickBench-shaped table of --rows rows.
func cmdGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rows := fs.Int("rows", 10_000_000, "number of rows")
	order := fs.String("order", "shuffled", "row order: shuffled or clustered (sorted by CounterID, EventDate, UserID, EventTime)")
	seed := fs.Int64("seed", 1, "random seed (equal flags give a byte-identical file)")
	users := fs.Int("users", 0, "distinct UserIDs (0: rows/5.67, as in ClickBench)")
	rowGroup := fs.Int("row-group", 1<<20, "rows per Parquet row group")
	out := fs.String("out", "data", "output directory (created if missing)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cachebook gen [--rows N] [--order shuffled|clustered] [--seed S] [--out DIR]")
		fmt.Fprintln(stderr, "\nWrites DIR/hits.parquet, a ClickBench-shaped hits table.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *rows <= 0 {
		return errors.New("--rows must be positive")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(*out, "hits.parquet")

	o := gen.Options{Rows: *rows, Order: *order, Seed: *seed, Users: *users, RowGroupRows: *rowGroup}
	start := time.Now()
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar := &progressBar{w: stderr, start: start}
		o.Progress = bar.update
		defer bar.finish()
	}
	if err := gen.WriteFile(ctx, path, o); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d rows (%s order, seed %d), %d bytes in %.1f s\n",
		path, *rows, o.Order, *seed, st.Size(), secs)
	return nil
}

// progressBar draws a one-line progress bar, at most ten times a second.
type progressBar struct {
	w     io.Writer
	start time.Time
	last  time.Time
	drawn bool
}

func (b *progressBar) update(done, total int) {
	now := time.Now()
	if done < total && now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last = now
	const width = 40
	frac := float64(done) / float64(max(total, 1))
	n := int(frac * width)
	fmt.Fprintf(b.w, "\r[%s%s] %5.1f%% %d/%d rows %.0fs", strings.Repeat("=", n), strings.Repeat(" ", width-n),
		100*frac, done, total, now.Sub(b.start).Seconds())
	b.drawn = true
}

func (b *progressBar) finish() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}
