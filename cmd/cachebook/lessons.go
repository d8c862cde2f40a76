package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"cachebook/lessons"
)

const lessonsUsage = `usage: cachebook lessons [--format table|json]

Lists the built-in lessons: name, title and learning goal. Open one with
"cachebook run NAME", "cachebook export NAME --to ipynb" or in the server.`

// cmdLessons lists the built-in lessons.
func cmdLessons(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lessons", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, lessonsUsage); fs.PrintDefaults() }
	format := fs.String("format", "table", "output format: table or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), lessonsUsage)
	}
	list, err := lessons.List()
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	case "table":
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tTITLE\tGOAL")
		for _, l := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, l.Title, l.Goal)
		}
		return tw.Flush()
	default:
		return fmt.Errorf("unknown format %q (want table or json)", *format)
	}
}
