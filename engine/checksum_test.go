package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyPageChecksums: a value changed inside a page leaves its CRC
// wrong; by default the scan reads the page (as DuckDB does), and with
// SET verify_page_checksums = true the query fails naming the mismatch.
func TestVerifyPageChecksums(t *testing.T) {
	type rec struct{ X int64 }
	const base = 1 << 40
	var rows []rec
	for i := range 1000 {
		rows = append(rows, rec{X: base + int64(i)})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.parquet")
	writeParquet(t, path, rows)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], base+500)
	at := bytes.Index(data, v[:])
	if at < 0 || bytes.Index(data[at+1:], v[:]) >= 0 {
		t.Fatalf("value found %d times", bytes.Count(data, v[:]))
	}
	data[at] ^= 0x01 // base+500 becomes base+501, inside its row group's min/max
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := db.NewSession()
	q := fmt.Sprintf("SELECT count(*) FROM c WHERE X = %d", base+501)
	if got := runSQL(t, s, q); got != "2" {
		t.Errorf("unverified: got %q, want 2 (the changed value read)", got)
	}
	// A new DB: the first one's cache holds the column decoded.
	db, err = Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s = db.NewSession()
	if err := s.Set("verify_page_checksums", "true"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Exec(context.Background(), q, nil)
	if err == nil || !strings.Contains(err.Error(), "CRC mismatch") {
		t.Errorf("verified: want a CRC mismatch, got %v", err)
	}
}
