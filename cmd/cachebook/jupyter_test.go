package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCmdJupyterInstall(t *testing.T) {
	prefix := t.TempDir()
	data := t.TempDir()
	var out, errb bytes.Buffer
	ctx := context.Background()
	if err := cmdJupyter(ctx, []string{"install", "--prefix", prefix, "--data", data, "--bin", "/opt/cb/cachebook"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	dir := filepath.Join(prefix, "share", "jupyter", "kernels", "cachebook")
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Argv          []string          `json:"argv"`
		DisplayName   string            `json:"display_name"`
		Language      string            `json:"language"`
		InterruptMode string            `json:"interrupt_mode"`
		Env           map[string]string `json:"env"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/opt/cb/cachebook", "jupyter", "kernel", "-f", "{connection_file}"}; !slices.Equal(spec.Argv, want) {
		t.Errorf("argv = %q, want %q", spec.Argv, want)
	}
	if spec.Language != "sql" || spec.InterruptMode != "message" || spec.Env["CACHEBOOK_DATA"] != data || spec.DisplayName == "" {
		t.Errorf("kernel.json = %s", b)
	}
	for _, size := range []int{32, 64} {
		f, err := os.Open(filepath.Join(dir, "logo-"+itoa(size)+"x"+itoa(size)+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() != size || img.Bounds().Dy() != size {
			t.Errorf("logo %d: %v %v", size, err, img.Bounds())
		}
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "logo-svg.svg")); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("logo-svg.svg: %v", err)
	}
	// Installing again replaces it; uninstall removes it.
	if err := cmdJupyter(ctx, []string{"install", "--prefix", prefix, "--data", data}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if err := cmdJupyter(ctx, []string{"uninstall", "--prefix", prefix}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("kernelspec still there after uninstall: %v", err)
	}
	if err := cmdJupyter(ctx, []string{"uninstall", "--prefix", prefix}, &out, &errb); err == nil {
		t.Error("uninstall of a missing kernelspec succeeded")
	}
	// A kernelspec that is not ours is not removed.
	other := filepath.Join(prefix, "share", "jupyter", "kernels", "python3")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "kernel.json"), []byte(`{"argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}`), 0o644)
	if err := cmdJupyter(ctx, []string{"uninstall", "--prefix", prefix, "--name", "python3"}, &out, &errb); err == nil {
		t.Error("uninstall removed a kernelspec that is not cachebook's")
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("python3 kernelspec was removed: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestCmdJupyterErrors(t *testing.T) {
	var out, errb bytes.Buffer
	ctx := context.Background()
	user := t.TempDir()
	t.Setenv("JUPYTER_DATA_DIR", user)
	for _, args := range [][]string{
		{},
		{"nosuch"},
		{"install", "--user", "--prefix", "x"},
		{"install", "--name", "../evil"},
		{"install", "extra"},
		{"kernel"},
		{"kernel", "-f", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if err := cmdJupyter(ctx, args, &out, &errb); err == nil {
			t.Errorf("cachebook jupyter %q succeeded", args)
		}
	}
	// A named data directory that does not exist, or is a file, is
	// refused with its name, and nothing is installed.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(t.TempDir(), "missing"), file} {
		prefix := t.TempDir()
		err := cmdJupyter(ctx, []string{"install", "--prefix", prefix, "--data", dir}, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("install --data %s: %v, want an error naming it", dir, err)
		}
		if _, err := os.Stat(filepath.Join(prefix, "share", "jupyter", "kernels", "cachebook")); err == nil {
			t.Errorf("install --data %s installed a kernelspec", dir)
		}
	}
	// The default is the user's Jupyter data directory.
	if err := cmdJupyter(ctx, []string{"install", "--data", t.TempDir()}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(user, "kernels", "cachebook", "kernel.json")); err != nil {
		t.Errorf("default install: %v", err)
	}
}
