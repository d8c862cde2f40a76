package kernel

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"cachebook/engine"
	"cachebook/engine/gen/gentest"
)

// TestKeysTableCell: a cell naming keys gets the generated table, sized
// within its cell memory, and its output states the sizes; a second cell
// reuses the table.
func TestKeysTableCell(t *testing.T) {
	x, err := NewExecutor(Config{DB: hitsDB(t), Logger: quietLogger(), Limits: Limits{CellMemory: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var rec recorder
		reply, err := x.Execute(context.Background(), Cell{Kind: KindSQL,
			Source: "SELECT count(*), count(DISTINCT k), count(DISTINCT s) FROM keys"}, rec.emit)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		var out strings.Builder
		for _, m := range rec.msgs {
			b, _ := json.Marshal(m.Content)
			out.Write(b)
		}
		for _, want := range []string{"keys: ", "rows in shuffled order", "distinct keys"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("run %d: output lacks %q: %s", i, want, out.String())
			}
		}
		// Sized from the measured last level where the probe found one,
		// else from the OS's L3; either way the output says which.
		if o := out.String(); !strings.Contains(o, "the last cache level measured here") && !strings.Contains(o, "the L3 of") {
			t.Errorf("run %d: output names no cache level: %s", i, o)
		}
		st := reply.Outcome.Data[MIMEResult].(*ResultBundle).Statements[0]
		if st.RowCount != 1 || st.Rows[0][2] == nil || *st.Rows[0][2] != "1000" {
			t.Errorf("run %d: %v", i, st.Rows)
		}
	}
	// A cell that does not name the table, if its text has the word
	// (which a regular expression over the SQL took for a name), does not
	// state its sizes.
	for _, src := range []string{"SELECT count(*) FROM hits", "SELECT 'from keys' AS t FROM hits LIMIT 1 -- join keys"} {
		var rec recorder
		if _, err := x.Execute(context.Background(), Cell{Kind: KindSQL, Source: src}, rec.emit); err != nil {
			t.Fatal(err)
		}
		for _, m := range rec.msgs {
			if b, _ := json.Marshal(m.Content); strings.Contains(string(b), "rows in shuffled order") {
				t.Errorf("%s: the cell states the keys sizes: %s", src, b)
			}
		}
	}
}

// TestKeysTableShared: two sessions on one engine asking for keys at once
// both get it (generated once: the engine resolves the name through the
// one builder registered on it).
func TestKeysTableShared(t *testing.T) {
	db, err := engine.Open(engine.Options{DataDir: gentest.HitsDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		x, err := NewExecutor(Config{DB: db, Logger: quietLogger(), Limits: Limits{CellMemory: 32 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := x.Execute(context.Background(), Cell{Kind: KindSQL, Source: "SELECT count(DISTINCT s) FROM keys"}, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
