//go:build unix

package storage

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFORefused: a FIFO named like a table is listed as unreadable and
// refused, without the open that would block until someone writes to it.
func TestFIFORefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "x.parquet"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.parquet"), writeAllTypes(t, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tables, err := c.Tables()
		if err != nil {
			t.Error(err)
			return
		}
		if len(tables) != 2 || tables[1].Name != "x" || !strings.Contains(tables[1].Err, "not a regular file") || tables[0].Err != "" {
			t.Errorf("tables %+v", tables)
		}
		for _, ref := range []struct {
			name   string
			isFile bool
		}{{"x", false}, {"x.parquet", true}} {
			if _, err := c.Table(ref.name, ref.isFile); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Table(%q): %v", ref.name, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("listing or resolving a FIFO hangs")
	}
}
