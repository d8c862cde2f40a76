package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"cachebook/engine/units"
	"cachebook/jupyter"
	"cachebook/kernel"
)

const jupyterUsage = `usage: cachebook jupyter install [--user | --prefix DIR | --sys-prefix] [--name NAME] [--data DIR]
       cachebook jupyter uninstall [--user | --prefix DIR | --sys-prefix] [--name NAME]
       cachebook jupyter kernel -f CONNECTION_FILE [--data DIR]

install writes a Jupyter kernelspec (kernel.json and logos) that starts
this binary as a kernel; JupyterLab, Notebook, VS Code, nbclient and
papermill then list "cachebook (SQL)". Without a location flag it installs
for the current user (--user). uninstall removes it. kernel is what Jupyter
runs: it serves one kernel on the ports of CONNECTION_FILE.`

// cmdJupyter dispatches the jupyter subcommands.
func cmdJupyter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, jupyterUsage)
		return errors.New("want a subcommand: install, uninstall or kernel")
	}
	switch args[0] {
	case "install":
		return jupyterInstall(args[1:], stdout, stderr)
	case "uninstall":
		return jupyterUninstall(args[1:], stdout, stderr)
	case "kernel":
		return jupyterKernel(args[1:], stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stderr, jupyterUsage)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q\n%s", args[0], jupyterUsage)
}

// specLocation holds the flags that choose where a kernelspec lives.
type specLocation struct {
	user      bool
	prefix    string
	sysPrefix bool
	name      string
}

func (l *specLocation) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.user, "user", false, "install for the current user (the default)")
	fs.StringVar(&l.prefix, "prefix", "", "install under DIR/share/jupyter/kernels")
	fs.BoolVar(&l.sysPrefix, "sys-prefix", false, "install into the active Python environment (virtualenv or conda, else python3's sys.prefix)")
	fs.StringVar(&l.name, "name", "cachebook", "kernelspec name")
}

// dir returns the kernelspec directory.
func (l *specLocation) dir() (string, error) {
	n := 0
	for _, set := range []bool{l.user, l.prefix != "", l.sysPrefix} {
		if set {
			n++
		}
	}
	if n > 1 {
		return "", errors.New("use only one of --user, --prefix and --sys-prefix")
	}
	if l.name == "" || strings.ContainsAny(l.name, `/\`) || l.name == "." || l.name == ".." {
		return "", fmt.Errorf("--name %q is not a kernelspec name", l.name)
	}
	var base string
	switch {
	case l.prefix != "":
		p, err := filepath.Abs(l.prefix)
		if err != nil {
			return "", err
		}
		base = filepath.Join(p, "share", "jupyter")
	case l.sysPrefix:
		p, err := sysPrefix()
		if err != nil {
			return "", err
		}
		base = filepath.Join(p, "share", "jupyter")
	default:
		d, err := jupyterUserDataDir()
		if err != nil {
			return "", err
		}
		base = d
	}
	return filepath.Join(base, "kernels", l.name), nil
}

// jupyterUserDataDir is jupyter_core's user data directory.
func jupyterUserDataDir() (string, error) {
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return filepath.Abs(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the Jupyter data directory: %w", err)
	}
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "Jupyter"), nil
	case "windows":
		if a := os.Getenv("APPDATA"); a != "" {
			return filepath.Join(a, "jupyter"), nil
		}
		return filepath.Join(home, "AppData", "Roaming", "jupyter"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "jupyter"), nil
	}
	return filepath.Join(home, ".local", "share", "jupyter"), nil
}

// sysPrefix is the prefix of the active Python environment.
func sysPrefix() (string, error) {
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			return p, nil
		}
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.prefix)").Output()
	if err != nil {
		return "", fmt.Errorf("--sys-prefix: no virtualenv or conda environment is active and python3 did not answer: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func jupyterInstall(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("jupyter install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var loc specLocation
	loc.register(fs)
	display := fs.String("display-name", "cachebook (SQL)", "name the front ends show")
	data := fs.String("data", "", "data directory the kernel opens (default $CACHEBOOK_DATA or ./data, made absolute)")
	bin := fs.String("bin", "", "path of the cachebook binary the kernelspec starts (default: this binary)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	dir, err := loc.dir()
	if err != nil {
		return err
	}
	exe := *bin
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find this binary: %w", err)
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	dataPath, err := filepath.Abs(dataDir(*data))
	if err != nil {
		return err
	}
	if err := checkDataDir(dataPath, *data != "" || os.Getenv("CACHEBOOK_DATA") != "", stderr); err != nil {
		return err
	}
	spec, err := kernelSpec(exe, *display, dataPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("install kernelspec: %w", err)
	}
	files := map[string][]byte{"kernel.json": spec, "logo-svg.svg": []byte(logoSVG)}
	for _, size := range []int{32, 64} {
		files[fmt.Sprintf("logo-%dx%d.png", size, size)], err = logoPNG(size)
		if err != nil {
			return err
		}
	}
	for name, b := range files {
		if err := writeOutput(filepath.Join(dir, name), b, stdout); err != nil {
			return fmt.Errorf("install kernelspec: %w", err)
		}
	}
	fmt.Fprintf(stdout, "installed kernelspec %s in %s\n  starts %s jupyter kernel\n  data directory %s\n", loc.name, dir, exe, dataPath)
	return nil
}

// checkDataDir refuses a data directory that was named (named) but is
// not a directory: every SQL cell of the kernel would fail. The default
// (./data) may be made later; a missing one is only warned about.
func checkDataDir(dir string, named bool, stderr io.Writer) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && st.IsDir():
		return nil
	case err == nil:
		err = errors.New("not a directory")
	}
	if named {
		return fmt.Errorf("data directory %s: %w (make it with cachebook gen, or name another with --data)", dir, err)
	}
	fmt.Fprintf(stderr, "warning: data directory %s: %v; the kernel's SQL cells fail until it exists (cachebook gen --out %s)\n", dir, err, dir)
	return nil
}

// kernelSpec returns the kernel.json of the kernelspec.
func kernelSpec(exe, display, data string) ([]byte, error) {
	spec := map[string]any{
		"argv":           []string{exe, "jupyter", "kernel", "-f", "{connection_file}"},
		"display_name":   display,
		"language":       "sql",
		"interrupt_mode": "message",
		"env":            map[string]string{"CACHEBOOK_DATA": data},
		"metadata":       map[string]any{"cachebook": map[string]any{"data_dir": data}, "debugger": false},
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func jupyterUninstall(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("jupyter uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var loc specLocation
	loc.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	dir, err := loc.dir()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		return fmt.Errorf("no kernelspec %s in %s: %w", loc.name, filepath.Dir(dir), err)
	}
	var spec struct {
		Argv []string `json:"argv"`
	}
	if json.Unmarshal(b, &spec) != nil || len(spec.Argv) < 3 || spec.Argv[1] != "jupyter" || spec.Argv[2] != "kernel" {
		return fmt.Errorf("%s is not a cachebook kernelspec; not removing it", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("uninstall: %w", err)
	}
	fmt.Fprintf(stdout, "removed kernelspec %s from %s\n", loc.name, dir)
	return nil
}

func jupyterKernel(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("jupyter kernel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	connFile := fs.String("f", "", "connection file written by Jupyter")
	data := fs.String("data", "", "data directory (default $CACHEBOOK_DATA or ./data)")
	queryMemory := fs.String("query-memory", "2GiB", "memory limit of one query")
	cellMemory := fs.String("cell-memory", units.FormatBytes(defaultCellMemory()),
		"the cap measurement cells and experiments size their buffers against (default: a quarter of physical memory or the cgroup limit)")
	maxRows := fs.Int("max-rows", 1000, "result rows sent per statement (the total count is always shown)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	maxMessage := fs.String("max-message", units.FormatBytes(jupyter.DefaultMaxMessageBytes),
		"the largest incoming message (all its frames); a larger one closes its connection as it is read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *connFile == "" || fs.NArg() != 0 {
		return fmt.Errorf("want -f CONNECTION_FILE\n%s", jupyterUsage)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	qmem, err := units.ParseBytes(*queryMemory)
	if err != nil {
		return fmt.Errorf("--query-memory: %w", err)
	}
	cmem, err := units.ParseBytes(*cellMemory)
	if err != nil {
		return fmt.Errorf("--cell-memory: %w", err)
	}
	maxMsg, err := units.ParseBytes(*maxMessage)
	if err != nil || maxMsg <= 0 {
		return fmt.Errorf("--max-message %q: want a positive size such as 64MiB", *maxMessage)
	}
	conn, err := jupyter.ReadConnectionFile(*connFile)
	if err != nil {
		return err
	}
	dir := dataDir(*data)
	// As under cachebook serve: the engine, and measurement cells pinned
	// to a reserved core where there is one.
	xc := executorConfig(dir, kernel.Limits{MaxRows: *maxRows, QueryMemory: qmem, CellMemory: cmem}, log)
	k, err := jupyter.New(jupyter.Config{Conn: conn, Executor: xc, Logger: log, Version: version(), MaxMessageBytes: maxMsg})
	if err != nil {
		return err
	}
	// Jupyter interrupts a kernel with SIGINT when its kernelspec has no
	// interrupt_mode "message"; either way a cell stops, the kernel stays.
	// (main's context also watches SIGINT, so it is not used here.)
	kctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	sigint := make(chan os.Signal, 1)
	signal.Notify(sigint, os.Interrupt)
	defer signal.Stop(sigint)
	go func() {
		for range sigint {
			k.Interrupt()
		}
	}()
	kctx, cancel := context.WithCancel(kctx)
	defer cancel()
	go watchParent(kctx, cancel, log)
	_, err = k.Run(kctx)
	return err
}

// watchParent ends the kernel when the process that started it has gone,
// as ipykernel does: jupyter_client names itself in JPY_PARENT_PID, and a
// kernel whose client was killed (a timed-out nbclient, a closed
// terminal) would otherwise live on, holding its memory.
func watchParent(ctx context.Context, cancel context.CancelFunc, log *slog.Logger) {
	if runtime.GOOS == "windows" || os.Getenv("JPY_PARENT_PID") == "" {
		return // Windows passes a handle there, not a process id
	}
	parent := os.Getppid()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if os.Getppid() != parent {
				log.Warn("jupyter: the process that started the kernel has ended; shutting down", "parent", parent)
				cancel()
				return
			}
		}
	}
}

// version is the binary's module version (or VCS revision), or "dev".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
}

// logoSVG is the kernel's logo: three bars, the cache levels, growing
// taller and slower.
const logoSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect width="64" height="64" rx="10" fill="#1f2937"/>
<rect x="10" y="38" width="12" height="16" fill="#34d399"/>
<rect x="26" y="26" width="12" height="28" fill="#fbbf24"/>
<rect x="42" y="10" width="12" height="44" fill="#f87171"/>
</svg>
`

// logoPNG draws the logo as a size×size PNG.
func logoPNG(size int) ([]byte, error) {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	fill := func(x0, y0, x1, y1 float64, c color.NRGBA) {
		s := float64(size) / 64
		for y := int(y0 * s); y < int(y1*s); y++ {
			for x := int(x0 * s); x < int(x1*s); x++ {
				img.SetNRGBA(x, y, c)
			}
		}
	}
	fill(0, 0, 64, 64, color.NRGBA{0x1f, 0x29, 0x37, 0xff})
	fill(10, 38, 22, 54, color.NRGBA{0x34, 0xd3, 0x99, 0xff})
	fill(26, 26, 38, 54, color.NRGBA{0xfb, 0xbf, 0x24, 0xff})
	fill(42, 10, 54, 54, color.NRGBA{0xf8, 0x71, 0x71, 0xff})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("logo: %w", err)
	}
	return b.Bytes(), nil
}
