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

// TestLongNames saves and loads names up to the 255 bytes a Linux file
// name may have (the temporary file's name must not grow with it).
func TestLongNames(t *testing.T) {
	dir := t.TempDir()
	nb, _ := Parse([]byte(sampleForSave))
	for _, n := range []int{200, 233, 234, 250, 255} {
		name := strings.Repeat("n", n-len(Ext)) + Ext
		if err := ValidName(name); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if err := Save(dir, name, nb); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if _, err := Load(dir, name); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	// Multi-byte runes count in bytes.
	if err := ValidName(strings.Repeat("é", 127) + Ext); err == nil {
		t.Error("a 255-byte limit counted runes")
	}
	assertNoTemp(t, dir)
}

// TestCleanTemp plants the temporary files of interrupted saves (this
// version's and the older naming) beside notebooks and in a
// sub-directory: CleanTemp removes those and nothing else.
func TestCleanTemp(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := []string{".cachebook-save-0123456789abcdef.tmp", ".a.md.tmp-0123456789abcdef", "sub/.cachebook-save-fedcba9876543210.tmp"}
	keep := []string{"a.md", "sub/b.md", ".hidden", "x.tmp", ".a.md.tmp-xyz", "notes.md.tmp-0123456789abcdef"}
	for _, p := range append(append([]string{}, stale...), keep...) {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	removed, err := CleanTemp(root)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(removed, ",") != ".a.md.tmp-0123456789abcdef,.cachebook-save-0123456789abcdef.tmp,sub/.cachebook-save-fedcba9876543210.tmp" {
		t.Errorf("removed %q", removed)
	}
	for _, p := range keep {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range stale {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s left behind", p)
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
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			err = saveFile(root, "n.md", []byte(strings.Repeat("new content\n", 1000)), func(s string) error {
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
		if isTemp(e.Name()) || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
