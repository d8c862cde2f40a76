package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestSettingTableCoversSettings: every field of Settings is set by
// exactly one entry of settingTable, and no two entries share a name or an
// alias.
func TestSettingTableCoversSettings(t *testing.T) {
	var st Settings
	base := reflect.ValueOf(&st).Pointer()
	typ := reflect.TypeOf(st)
	owner := map[uintptr]string{} // field offset -> the entry setting it
	names := map[string]string{}
	for _, s := range settingTable {
		off := reflect.ValueOf(s.field(&st)).Pointer() - base
		if prev, ok := owner[off]; ok {
			t.Errorf("settings %s and %s set the same field", prev, s.Name)
		}
		owner[off] = s.Name
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if prev, ok := names[n]; ok {
				t.Errorf("name %q of %s is also %s's", n, s.Name, prev)
			}
			names[n] = s.Name
			if n != strings.ToLower(n) {
				t.Errorf("name %q is not lower case", n)
			}
		}
		if s.Doc == "" || s.Type == "" || len(s.Values) == 0 {
			t.Errorf("setting %s lacks its doc, type or values", s.Name)
		}
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if _, ok := owner[f.Offset]; !ok {
			t.Errorf("Settings.%s has no entry in settingTable", f.Name)
		}
	}
	if len(owner) != typ.NumField() {
		t.Errorf("%d entries for %d fields", len(owner), typ.NumField())
	}
}

// TestSettingsRoundTrip: for every setting, its default and each of its
// listed values formats to a text that SET takes back to the same
// Settings, and RESET restores the default.
func TestSettingsRoundTrip(t *testing.T) {
	db, err := Open(Options{QueryMemory: 4 << 30, MaxThreads: 8})
	if err != nil {
		t.Fatal(err)
	}
	def := db.defaultSettings()
	for _, st := range settingTable {
		s := db.NewSession()
		for _, lit := range st.Values {
			v := strings.Trim(lit, "'")
			if err := s.Set(st.Name, v); err != nil {
				t.Errorf("SET %s = %s: %v", st.Name, lit, err)
				continue
			}
			got := s.Settings()
			text := st.Format(got)
			if err := s.Set(strings.ToUpper(st.Name), text); err != nil || s.Settings() != got {
				t.Errorf("SET %s = %s, then %q: %v, settings %+v, want %+v", st.Name, lit, text, err, s.Settings(), got)
			}
			for _, a := range st.Aliases {
				if err := s.Set(a, text); err != nil || s.Settings() != got {
					t.Errorf("SET %s (alias of %s) = %q: %v", a, st.Name, text, err)
				}
			}
		}
		if err := s.Reset(st.Name); err != nil || s.Settings() != def {
			t.Errorf("RESET %s: %v, settings %+v, want %+v", st.Name, err, s.Settings(), def)
		}
		if err := s.Set(st.Name, st.Format(def)); err != nil || s.Settings() != def {
			t.Errorf("SET %s = its default %q: %v", st.Name, st.Format(def), err)
		}
	}
}

// TestSettingErrors: a refused value or name is an error that says what
// is accepted.
func TestSettingErrors(t *testing.T) {
	db, err := Open(Options{QueryMemory: 1 << 30, MaxThreads: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := db.NewSession()
	for _, c := range []struct{ name, value, want string }{
		{"nonsense", "1", `unknown setting "nonsense" (known: group_by, threads, radix_bits`},
		{"group_by", "hash", `group_by must be 'auto', 'naive', 'radix' or 'parallel', got "hash"`},
		{"threads", "9", `threads must be an integer between 1 and 4, got "9"`},
		{"radix_bits", "17", `radix_bits must be 'auto' or an integer between 0 and 16`},
		{"huge_pages", "maybe", `huge_pages must be true or false, got "maybe"`},
		{"memory_limit", "2GiB", `memory_limit can be at most 1GiB on this server, got "2GiB"`},
		{"memory_limit", "lots", `memory_limit: want a size such as 512MB`},
		{"counters", "on", `perf counters need their cell to run alone`},
		{"default_null_order", "middle", `default_null_order must be 'nulls_last', 'nulls_first'`},
	} {
		err := s.Set(c.name, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SET %s = %s: error %v, want it to contain %q", c.name, c.value, err, c.want)
		}
	}
	if s.Settings() != db.defaultSettings() {
		t.Errorf("a refused SET changed the settings: %+v", s.Settings())
	}
}

// TestShowAll: SHOW ALL lists every setting once with the session's value
// and the default.
func TestShowAll(t *testing.T) {
	db, err := Open(Options{QueryMemory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	s := db.NewSession()
	res, err := s.Exec(context.Background(), "SET threads = 1; SET null_order = 'postgres'; SHOW ALL", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res[2]
	if r.Rows != len(settingTable) || len(r.Columns) != 6 {
		t.Fatalf("SHOW ALL: %d rows, %d columns; want %d rows, 6 columns", r.Rows, len(r.Columns), len(settingTable))
	}
	rows := map[string][]string{}
	for i := range r.Rows {
		var row []string
		for _, v := range r.Vecs {
			row = append(row, string(v.Str(i)))
		}
		rows[row[0]] = row
	}
	for _, c := range []struct{ name, value, def string }{
		{"threads", "1", ""},
		{"default_null_order", "nulls_last_on_asc_first_on_desc", "nulls_last"},
		{"memory_limit", "1GiB", "1GiB"},
		{"radix_bits", "auto", "auto"},
	} {
		row := rows[c.name]
		if row == nil || row[1] != c.value || c.def != "" && row[2] != c.def {
			t.Errorf("SHOW ALL row of %s: %q, want value %q, default %q", c.name, row, c.value, c.def)
		}
	}
}
