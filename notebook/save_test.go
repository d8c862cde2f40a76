package notebook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a.md", "GROUP BY and the cache.md", "日本.md", "x-1_2.md"} {
		if err := ValidName(ok); err != nil {
			t.Errorf("ValidName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".md", "a", "a.txt", "../a.md", "a/b.md", `a\b.md`, ".hidden.md", "..",
		"a\x00.md", "a\n.md", "c:x.md", strings.Repeat("a", 300) + ".md", "\xff.md", "/abs.md"} {
		if err := ValidName(bad); err == nil {
			t.Errorf("ValidName(%q) accepted it", bad)
		}
	}
}

func TestSaveAndLoad(t *testing.T) {
	dir := t.TempDir()
	nb, err := Parse([]byte(sampleForSave))
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, "n.md", nb); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "n.md"))
	if err != nil || string(got) != sampleForSave {
		t.Fatalf("saved %q, %v", got, err)
	}
	back, err := Load(dir, "n.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Markdown()) != sampleForSave {
		t.Error("Load gave a different notebook")
	}
	if _, err := Load(dir, "../n.md"); err == nil {
		t.Error("Load escaped the directory")
	}
	if err := Save(dir, "../escape.md", nb); err == nil {
		t.Error("Save escaped the directory")
	}
	// A symlink inside dir pointing outside must not be followed.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "link.md")); err == nil {
		if _, err := Load(dir, "link.md"); err == nil {
			t.Error("Load followed a symlink out of the directory")
		}
	}
	assertNoTemp(t, dir)
}

const sampleForSave = "# old\n\n```sql\nSELECT 1\n```\n"

// TestSaveIsAtomic injects a failure at each step of a save over an
// existing file: the old file must stay intact and no temporary file may
// remain.
func TestSaveIsAtomic(t *testing.T) {
	for _, step := range []string{"write", "sync", "rename"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			old := []byte("# old version\n")
			if err := os.WriteFile(filepath.Join(dir, "n.md"), old, 0o644); err != nil {
				t.Fatal(err)
			}
			injected := errors.New("injected crash")
			var sawPartial bool
			err := saveFile(dir, "n.md", []byte(strings.Repeat("new content\n", 1000)), func(s string) error {
				// While the new bytes are being written, the visible
				// file must still be the old one.
				if got, _ := os.ReadFile(filepath.Join(dir, "n.md")); string(got) != string(old) {
					sawPartial = true
				}
				if s == step {
					return injected
				}
				return nil
			})
			if !errors.Is(err, injected) {
				t.Fatalf("err = %v, want the injected error", err)
			}
			if sawPartial {
				t.Error("a partial file was visible under the notebook's name")
			}
			got, err := os.ReadFile(filepath.Join(dir, "n.md"))
			if err != nil || string(got) != string(old) {
				t.Errorf("old file = %q, %v; want it untouched", got, err)
			}
			assertNoTemp(t, dir)
		})
	}
}

func TestSaveErrors(t *testing.T) {
	nb, _ := Parse([]byte("x\n"))
	if err := Save(filepath.Join(t.TempDir(), "missing"), "a.md", nb); err == nil {
		t.Error("Save into a missing directory succeeded")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, "d.md", nb); err == nil {
		t.Error("Save over a directory succeeded")
	}
	assertNoTemp(t, dir)
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
