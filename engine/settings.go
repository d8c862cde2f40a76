package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"cachebook/engine/units"
)

// Settings are the per-session options changed with SET and RESET. Each
// field is described by one entry of settingTable, which SET, RESET,
// SHOW ALL, the kernel's cell attributes and the Jupyter completion all
// read: adding a setting is a field here and an entry there.
type Settings struct {
	GroupBy     string // naive, radix, parallel or auto
	Threads     int    // worker goroutines for the parallel strategy
	RadixBits   int    // partitions = 2^RadixBits for radix and parallel; -1: derived from the cache sizes
	SumRewrite  bool   // rewrite sum(x + c) to sum(x) + c*count(x)
	MemoryLimit int64  // bytes one query may allocate
	// TempDirectory is where a GROUP BY over the memory limit spills
	// ("": os.TempDir()/cachebook); MaxTempDirectorySize bounds the
	// bytes one statement's spill files may hold.
	TempDirectory        string
	MaxTempDirectorySize int64
	HugePages            bool // big tables and partitions on huge pages (Linux)
	GenericAgg           bool // disable the tuned count(*) loop and packed keys
	// PreAggregate folds rows into a small per-worker table before the
	// radix partitions (see engine/agg/preagg.go).
	PreAggregate bool
	// VerifyPageChecksums checks each Parquet page's CRC32, where the
	// file wrote one, before decoding it.
	VerifyPageChecksums bool
	// Counters is "model" when the following GROUP BYs are to be replayed
	// through the cache model (SET counters = 'model'; the kernel acts on
	// it), "off" otherwise.
	Counters string
	// NullOrder is where ORDER BY puts NULLs when a key does not say
	// NULLS FIRST or NULLS LAST (SET default_null_order, as DuckDB):
	// "nulls_last" (the default), "nulls_first",
	// "nulls_first_on_asc_last_on_desc" or
	// "nulls_last_on_asc_first_on_desc".
	NullOrder string
}

// NullsFirst reports where NullOrder puts the NULLs of an ORDER BY key
// without NULLS FIRST or NULLS LAST.
func (st Settings) NullsFirst(desc bool) bool {
	switch st.NullOrder {
	case "nulls_first":
		return true
	case "nulls_first_on_asc_last_on_desc":
		return !desc
	case "nulls_last_on_asc_first_on_desc":
		return desc
	}
	return false
}

// A Setting describes one session setting: its names and documentation,
// and how SET, RESET and SHOW ALL read and write its field of Settings.
type Setting struct {
	// Name is the setting's name as SET takes it, in lower case.
	Name string
	// Aliases are other names SET, RESET and cell attributes accept for
	// it (DuckDB's, where they differ).
	Aliases []string
	// Doc says what the setting does.
	Doc string
	// Type is the SQL type of its value as SHOW ALL shows it: VARCHAR,
	// BIGINT or BOOLEAN.
	Type string
	// Values are values SET takes, written as SQL literals ('auto', 4,
	// true): every value of a choice, examples of a number or a size.
	Values []string

	reset  func(db *DB, st *Settings) // sets the field to its default
	set    func(db *DB, st *Settings, v string) error
	format func(st *Settings) string
	field  func(st *Settings) any // the field's address (for the tests)
}

// Format returns the setting's value in st as SET takes it back.
func (s Setting) Format(st Settings) string { return s.format(&st) }

// fieldSpec is how one setting of type T parses, formats and defaults
// its field of Settings.
type fieldSpec[T any] struct {
	field func(*Settings) *T
	def   func(*DB) T
	// parse reads the lower-cased, trimmed text of SET's value. Its error
	// completes the sentence "<name> …, got <value>" unless it is a
	// *settingError, which is the whole message.
	parse  func(db *DB, v string) (T, error)
	format func(T) string
	// keepCase passes the value to parse with its case (a path).
	keepCase bool
}

// settingError is an error of a parse func that says all there is to say.
type settingError struct{ msg string }

func (e *settingError) Error() string { return e.msg }

// bind completes s with the functions of f.
func (f fieldSpec[T]) bind(s Setting) Setting {
	s.reset = func(db *DB, st *Settings) { *f.field(st) = f.def(db) }
	s.set = func(db *DB, st *Settings, value string) error {
		v := strings.TrimSpace(value)
		if !f.keepCase {
			v = strings.ToLower(v)
		}
		x, err := f.parse(db, v)
		if err != nil {
			if se := (*settingError)(nil); errors.As(err, &se) {
				return se
			}
			return fmt.Errorf("%s %v, got %q", s.Name, err, value)
		}
		*f.field(st) = x
		return nil
	}
	s.format = func(st *Settings) string { return f.format(*f.field(st)) }
	s.field = func(st *Settings) any { return f.field(st) }
	return s
}

// boolSetting is a BOOLEAN setting.
func boolSetting(s Setting, field func(*Settings) *bool, def bool) Setting {
	s.Type, s.Values = "BOOLEAN", []string{"true", "false"}
	return fieldSpec[bool]{
		field: field,
		def:   func(*DB) bool { return def },
		parse: func(_ *DB, v string) (bool, error) {
			switch v {
			case "true", "on", "1":
				return true, nil
			case "false", "off", "0":
				return false, nil
			}
			return false, errors.New("must be true or false")
		},
		format: strconv.FormatBool,
	}.bind(s)
}

// choiceSetting is a VARCHAR setting that takes one of the canonical
// values listed in s.Values or a synonym of one (synonyms maps each to
// its canonical value).
func choiceSetting(s Setting, field func(*Settings) *string, def string, synonyms map[string]string) Setting {
	s.Type = "VARCHAR"
	for i, v := range s.Values {
		s.Values[i] = "'" + v + "'"
	}
	return fieldSpec[string]{
		field: field,
		def:   func(*DB) string { return def },
		parse: func(_ *DB, v string) (string, error) {
			for _, c := range s.Values {
				if "'"+v+"'" == c {
					return v, nil
				}
			}
			if c, ok := synonyms[v]; ok {
				return c, nil
			}
			return "", fmt.Errorf("must be %s", orList(s.Values))
		},
		format: func(v string) string { return v },
	}.bind(s)
}

// orList writes vs as "a, b or c".
func orList(vs []string) string {
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// maxThreads is the most threads SET threads takes on db.
func (db *DB) maxThreads() int {
	if m := db.opts.MaxThreads; m > 0 {
		return m
	}
	return 256
}

// settingTable lists every session setting, in the order SHOW ALL shows
// them. Every field of Settings has exactly one entry (settings_test.go).
var settingTable = []Setting{
	choiceSetting(Setting{Name: "group_by",
		Doc:    "GROUP BY strategy: naive (one hash table), radix (partition first so each table fits in cache), parallel (radix on several threads), auto (chosen from the estimated number of groups and the cache sizes).",
		Values: []string{"auto", "naive", "radix", "parallel"}},
		func(st *Settings) *string { return &st.GroupBy }, "auto", nil),
	fieldSpec[int]{
		field: func(st *Settings) *int { return &st.Threads },
		def: func(db *DB) int {
			return min(runtime.GOMAXPROCS(0), db.maxThreads())
		},
		parse: func(db *DB, v string) (int, error) {
			t, err := strconv.Atoi(v)
			if err != nil || t < 1 || t > db.maxThreads() {
				return 0, fmt.Errorf("must be an integer between 1 and %d", db.maxThreads())
			}
			return t, nil
		},
		format: strconv.Itoa,
	}.bind(Setting{Name: "threads", Aliases: []string{"worker_threads"}, Type: "BIGINT",
		Doc:    "Worker threads of the parallel strategy (1 to the server's cap; the default is the number of cores).",
		Values: []string{"1", "2", "4", "8"}}),
	fieldSpec[int]{
		field: func(st *Settings) *int { return &st.RadixBits },
		def:   func(*DB) int { return -1 },
		parse: func(_ *DB, v string) (int, error) {
			if v == "auto" {
				return -1, nil
			}
			b, err := strconv.Atoi(v)
			if err != nil || b < 0 || b > 16 {
				return 0, errors.New("must be 'auto' or an integer between 0 and 16")
			}
			return b, nil
		},
		format: func(b int) string {
			if b < 0 {
				return "auto"
			}
			return strconv.Itoa(b)
		},
	}.bind(Setting{Name: "radix_bits", Type: "VARCHAR",
		Doc:    "Partitions = 2^radix_bits for radix and parallel; auto derives it from the cache sizes.",
		Values: []string{"'auto'", "4", "6", "8", "10"}}),
	boolSetting(Setting{Name: "sum_rewrite",
		Doc: "Rewrite sum(x + c) as sum(x) + c*count(x)."},
		func(st *Settings) *bool { return &st.SumRewrite }, true),
	fieldSpec[int64]{
		field: func(st *Settings) *int64 { return &st.MemoryLimit },
		def:   func(db *DB) int64 { return db.opts.QueryMemory },
		parse: func(db *DB, v string) (int64, error) {
			b, err := units.ParseBytes(v)
			if err != nil {
				return 0, &settingError{"memory_limit: " + err.Error()}
			}
			if b > db.opts.QueryMemory {
				return 0, fmt.Errorf("can be at most %s on this server", units.FormatBytes(db.opts.QueryMemory))
			}
			return b, nil
		},
		format: units.FormatBytes,
	}.bind(Setting{Name: "memory_limit", Type: "VARCHAR",
		Doc:    "Bytes one query may allocate for hash tables, partitions and results (at most the server's per-query limit, the default).",
		Values: []string{"'512MB'", "'1GB'", "'2GiB'"}}),
	fieldSpec[string]{
		field: func(st *Settings) *string { return &st.TempDirectory },
		def:   func(*DB) string { return DefaultTempDirectory() },
		parse: func(_ *DB, v string) (string, error) {
			if v == "" {
				return DefaultTempDirectory(), nil
			}
			return v, nil
		},
		keepCase: true,
		format:   func(v string) string { return v },
	}.bind(Setting{Name: "temp_directory", Type: "VARCHAR",
		Doc:    "Where a GROUP BY over memory_limit spills its partitions ('' for the default under the OS temp directory).",
		Values: []string{"''", "'/tmp/cachebook'"}}),
	fieldSpec[int64]{
		field: func(st *Settings) *int64 { return &st.MaxTempDirectorySize },
		def:   func(*DB) int64 { return DefaultMaxTempDirectorySize },
		parse: func(_ *DB, v string) (int64, error) {
			b, err := units.ParseBytes(v)
			if err != nil {
				return 0, &settingError{"max_temp_directory_size: " + err.Error()}
			}
			return b, nil
		},
		format: units.FormatBytes,
	}.bind(Setting{Name: "max_temp_directory_size", Type: "VARCHAR",
		Doc:    "Bytes one statement's spill files may hold on disk (default 16 GiB).",
		Values: []string{"'1GB'", "'16GiB'"}}),
	boolSetting(Setting{Name: "huge_pages",
		Doc: "Put big tables and partitions on huge pages (Linux)."},
		func(st *Settings) *bool { return &st.HugePages }, true),
	boolSetting(Setting{Name: "generic_agg",
		Doc: "Disable the tuned integer-key count(*) loop and packed multi-column integer keys (to compare)."},
		func(st *Settings) *bool { return &st.GenericAgg }, false),
	boolSetting(Setting{Name: "pre_aggregate",
		Doc: "Fold repeated keys in a small per-worker table before the radix partitions."},
		func(st *Settings) *bool { return &st.PreAggregate }, true),
	boolSetting(Setting{Name: "verify_page_checksums",
		Doc: "Check each Parquet page's CRC32, where the file wrote one, before decoding it (off, as in DuckDB: it costs about as much as decompressing)."},
		func(st *Settings) *bool { return &st.VerifyPageChecksums }, false),
	fieldSpec[string]{
		field: func(st *Settings) *string { return &st.Counters },
		def:   func(*DB) string { return "off" },
		parse: func(_ *DB, v string) (string, error) {
			switch v {
			case "off", "model":
				return v, nil
			case "on", "both":
				return "", &settingError{fmt.Sprintf("counters = %q: perf counters need their cell to run alone, so they are a cell attribute (counters=%s); SET counters takes 'model' or 'off'", v, v)}
			}
			return "", errors.New("must be 'model' or 'off'")
		},
		format: func(v string) string { return v },
	}.bind(Setting{Name: "counters", Type: "VARCHAR",
		Doc:    "model: replay the following GROUP BYs through the cache model and show its counts; off: do not. Perf counters are the cell attribute counters=on.",
		Values: []string{"'off'", "'model'"}}),
	// The values and synonyms DuckDB accepts.
	choiceSetting(Setting{Name: "default_null_order", Aliases: []string{"null_order"},
		Doc:    "Where ORDER BY puts NULLs when a key says neither NULLS FIRST nor NULLS LAST (as DuckDB).",
		Values: []string{"nulls_last", "nulls_first", "nulls_first_on_asc_last_on_desc", "nulls_last_on_asc_first_on_desc"}},
		func(st *Settings) *string { return &st.NullOrder }, "nulls_last",
		map[string]string{
			"nulls first": "nulls_first", "null first": "nulls_first", "first": "nulls_first",
			"nulls last": "nulls_last", "null last": "nulls_last", "last": "nulls_last",
			"sqlite": "nulls_first_on_asc_last_on_desc", "mysql": "nulls_first_on_asc_last_on_desc",
			"postgres": "nulls_last_on_asc_first_on_desc",
		}),
}

// AllSettings returns the session settings in the order SHOW ALL lists
// them.
func AllSettings() []Setting { return append([]Setting(nil), settingTable...) }

// LookupSetting returns the setting called name or one of its aliases,
// ignoring case and surrounding spaces.
func LookupSetting(name string) (Setting, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, s := range settingTable {
		if s.Name == n {
			return s, true
		}
		for _, a := range s.Aliases {
			if a == n {
				return s, true
			}
		}
	}
	return Setting{}, false
}

// SettingNames returns the settings' names as "a, b, …", for messages.
func SettingNames() string {
	names := make([]string, len(settingTable))
	for i, s := range settingTable {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// unknownSetting is the error for a name that is no setting.
func unknownSetting(name string) error {
	return fmt.Errorf("unknown setting %q (known: %s)", name, SettingNames())
}

// defaultSettings are a new session's settings: each entry's default
// (threads = GOMAXPROCS capped by Options.MaxThreads, memory_limit =
// Options.QueryMemory).
func (db *DB) defaultSettings() Settings {
	var st Settings
	for _, s := range settingTable {
		s.reset(db, &st)
	}
	return st
}

// NewSession returns a session with the default settings.
func (db *DB) NewSession() *Session {
	return &Session{db: db, settings: db.defaultSettings()}
}

// Settings returns the session's current settings.
func (s *Session) Settings() Settings { return s.settings }

// Set changes one setting by name, as the SQL statement SET name = value.
func (s *Session) Set(name, value string) error {
	st, ok := LookupSetting(name)
	if !ok {
		return unknownSetting(name)
	}
	return st.set(s.db, &s.settings, value)
}

// Reset restores one setting to its default, as RESET name; the name "all"
// restores every setting (RESET ALL).
func (s *Session) Reset(name string) error {
	if strings.EqualFold(strings.TrimSpace(name), "all") {
		s.settings = s.db.defaultSettings()
		return nil
	}
	st, ok := LookupSetting(name)
	if !ok {
		return unknownSetting(name)
	}
	st.reset(s.db, &s.settings)
	return nil
}

// DefaultMaxTempDirectorySize is max_temp_directory_size's default: a
// fixed size, as the free space of the temporary directory cannot be
// known portably.
const DefaultMaxTempDirectorySize = 16 << 30

// DefaultTempDirectory is temp_directory's default: cachebook under the
// OS temporary directory.
func DefaultTempDirectory() string { return filepath.Join(os.TempDir(), "cachebook") }
