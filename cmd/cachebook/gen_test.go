package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCmdGen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "data")
	var out, errb bytes.Buffer
	err := cmdGen(context.Background(), []string{"--rows", "3000", "--order", "clustered", "--seed", "9", "--out", dir}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	st, err := os.Stat(filepath.Join(dir, "hits.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3000 rows") || !strings.Contains(out.String(), "bytes") {
		t.Errorf("summary %q", out.String())
	}
	if errb.Len() != 0 {
		t.Errorf("progress written to a non-terminal: %q", errb.String())
	}
	if st.Size() < 1000 {
		t.Errorf("file of %d bytes", st.Size())
	}
	for _, args := range [][]string{{"--rows", "0"}, {"--order", "random", "--rows", "10"}, {"--bogus"}, {"extra"}} {
		if err := cmdGen(context.Background(), append(args, "--out", t.TempDir()), &out, &errb); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
