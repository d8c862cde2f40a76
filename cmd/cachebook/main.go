// Command cachebook is the one binary of cachebook: the notebook server, the
// data generator, the query CLI and the measurement tools.
//
// Usage:
//
//	cachebook <command> [flags] [args]
//
// Run "cachebook help" for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"syscall"

	"cachebook/engine"
	"cachebook/engine/spill"
)

// command is one subcommand of the binary.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"gen":        {"generate a ClickBench-shaped hits.parquet", cmdGen},
		"query":      {"run SQL statements and print the results", cmdQuery},
		"serve":      {"start the notebook server", cmdServe},
		"latency":    {"measure the memory latency hierarchy", cmdLatency},
		"bandwidth":  {"measure memory bandwidth (read, write, copy)", cmdBandwidth},
		"sweep":      {"GROUP BY cost as the number of groups grows", cmdSweep},
		"bench":      {"benchmark GROUP BY strategies side by side", cmdBench},
		"experiment": {"run a named experiment (false-sharing, zeroing, ...)", cmdExperiment},
		"lessons":    {"list the built-in lessons", cmdLessons},
		"run":        {"run every cell of a notebook and print the outputs", cmdRun},
		"export":     {"export a notebook as .ipynb or markdown", cmdExport},
		"import":     {"import a .ipynb file as a markdown notebook", cmdImport},
		"jupyter":    {"install or run cachebook as a Jupyter kernel", cmdJupyter},
		"site":       {"write a static site that runs every lesson in the browser", cmdSite},
	}
}

// heapFloor is the size of an allocation main holds and never touches.
// The engine keeps its large memory (columns, hash tables, partitions) out
// of Go's heap, so a query's heap is a few MiB, and with GOGC=100 the
// collector ran every few MiB allocated: twenty cycles for one scan of a
// column of 100M rows, 7 to 9 % of its CPU. Counted as live, the floor
// spaces the cycles by about its size; untouched, its pages are never
// faulted in, and the resident set grows only by the garbage the wider
// spacing lets accumulate.
const heapFloor = 16 << 20

func main() {
	processMemory = newMemoryLimit()
	floor := make([]byte, heapFloor)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	runtime.KeepAlive(floor)
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cachebook: unknown command %q\n\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	if args[0] == "serve" || args[0] == "query" {
		// Spill files a killed process left behind (SET temp_directory
		// elsewhere is cleaned by the statements that use it).
		spill.CleanStale(engine.DefaultTempDirectory())
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "cachebook %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: cachebook <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, cmds[n].summary)
	}
}

// dataDir returns the data directory: the flag value, else $CACHEBOOK_DATA,
// else "data".
func dataDir(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if d := os.Getenv("CACHEBOOK_DATA"); d != "" {
		return d
	}
	return "data"
}
