package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncatedWhileMapped truncates a file while a stream reads it from
// a mapping: the next page read faults (SIGBUS), which is an error naming
// the file, not a crash.
func TestTruncatedWhileMapped(t *testing.T) {
	data := writeAllTypes(t, 3000)
	for _, size := range []int64{0, 4096} {
		c, tb, rd := fileReader(t, data)
		ctx := context.Background()
		cs, err := rd.Stream(ctx, 1, tb.ColumnIndex("Str"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Next(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if c.mapped.Load() == 0 {
			t.Fatal("the chunk is not mapped")
		}
		if err := os.Truncate(filepath.Join(c.dir, "t.parquet"), size); err != nil {
			t.Fatal(err)
		}
		_, err = cs.Next(ctx, 1000)
		if !errors.Is(err, errFileChanged) || !strings.Contains(err.Error(), "t.parquet") || !strings.Contains(err.Error(), "offset") {
			t.Errorf("truncated to %d bytes: %v", size, err)
		}
		t.Log(err)
		cs.Close()
		rd.Close()
		if n := c.mapped.Load(); n != 0 {
			t.Errorf("%d bytes still mapped after the stream was closed", n)
		}
	}
}
