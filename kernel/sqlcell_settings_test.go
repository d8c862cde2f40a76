package kernel

import (
	"strings"
	"testing"

	"cachebook/engine"
)

// TestApplySettings: an sql cell's attributes are engine settings for that
// cell only (any setting of the engine's table, by name or alias), and an
// attribute that is none is refused with the list of those that are.
func TestApplySettings(t *testing.T) {
	db, err := engine.Open(engine.Options{QueryMemory: 1 << 30, MaxThreads: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := db.NewSession()
	if err := s.Set("memory_limit", "300MB"); err != nil {
		t.Fatal(err)
	}
	before := s.Settings()
	for _, c := range []struct {
		attrs   map[string]string
		check   func(engine.Settings) bool
		wantErr string
	}{
		{attrs: map[string]string{"group_by": "radix", "worker_threads": "2"},
			check: func(st engine.Settings) bool { return st.GroupBy == "radix" && st.Threads == 2 }},
		{attrs: map[string]string{"default_null_order": "postgres", "memory_limit": "64MiB"},
			check: func(st engine.Settings) bool {
				return st.NullOrder == "nulls_last_on_asc_first_on_desc" && st.MemoryLimit == 64<<20
			}},
		{attrs: map[string]string{"group_by": "radix", "colour": "blue"},
			wantErr: "attribute colour=blue: sql cells take engine settings as attributes (group_by, threads, radix_bits,"},
		{attrs: map[string]string{"threads": "9"},
			wantErr: `attribute threads=9: threads must be an integer between 1 and 4, got "9"`},
	} {
		restore, err := applySettings(s, Cell{Source: "SELECT 1", Attrs: c.attrs})
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: error %v, want %q", c.attrs, err, c.wantErr)
			}
		} else if err != nil {
			t.Errorf("%v: %v", c.attrs, err)
		} else {
			if !c.check(s.Settings()) {
				t.Errorf("%v: settings during the cell %+v", c.attrs, s.Settings())
			}
			restore()
		}
		if s.Settings() != before {
			t.Errorf("%v: settings after the cell %+v, want %+v", c.attrs, s.Settings(), before)
		}
	}
}
