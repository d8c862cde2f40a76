package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"cachebook/engine/gen"

	"github.com/parquet-go/parquet-go"
)

// TestWasmParts generates the hits table under Node as the page does, in
// parts in worker threads joined by joinHits, and checks that the joined
// file holds the native generator's rows (its bytes differ from a native
// file's: s2's snappy encoder has assembly on amd64 that compresses a
// little better; engine/gen's TestJoin checks that joined parts are byte
// for byte the whole file) and that a kernel reads it, registered as the
// list of segments joinHits returns.
func TestWasmParts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the wasm and runs Node")
	}
	node, wasm := buildWasm(t)
	const rows, group = 30000, 8192
	o := gen.Options{Rows: rows, Order: "shuffled", Seed: 1, RowGroupRows: group}
	var want bytes.Buffer
	if err := gen.Write(context.Background(), &want, o); err != nil {
		t.Fatal(err)
	}
	hits, err := parquet.Read[gen.Hit](bytes.NewReader(want.Bytes()), int64(want.Len()))
	if err != nil {
		t.Fatal(err)
	}
	users := map[int64]bool{}
	var regions int64
	var url []byte
	for _, h := range hits {
		users[h.UserID] = true
		regions += int64(h.RegionID)
		if bytes.Compare(h.URL, url) > 0 {
			url = h.URL
		}
	}
	wantRow := []string{fmt.Sprint(rows), fmt.Sprint(len(users)), fmt.Sprint(regions), string(url)}

	for _, parts := range []int{3} {
		t.Run(fmt.Sprintf("parts=%d", parts), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "hits.parquet")
			cmd := exec.Command(node, "node-gen.mjs", wasm, fmt.Sprint(rows), fmt.Sprint(parts), out, fmt.Sprint(group))
			stdout, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if e, ok := err.(*exec.ExitError); ok {
					stderr = e.Stderr
				}
				t.Fatalf("node: %v\n%s%s", err, stdout, stderr)
			}
			if !strings.Contains(string(stdout), fmt.Sprintf("%d parts:", parts)) {
				t.Errorf("not generated in %d parts:\n%s", parts, stdout)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			gotHits, err := parquet.Read[gen.Hit](bytes.NewReader(got), int64(len(got)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotHits, hits) {
				t.Errorf("the rows of the file made in %d parts differ from the native generator's", parts)
			}
			lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
			var res [][]string
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("the query's result: %v\n%s", err, stdout)
			}
			if len(res) != 1 || strings.Join(res[0], "|") != strings.Join(wantRow, "|") {
				t.Errorf("query over the registered segments = %q, want %q", res, wantRow)
			}
		})
	}
}
