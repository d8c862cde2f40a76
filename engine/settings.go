package engine

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"cachebook/engine/units"
)

// Settings are the per-session options changed with SET and RESET.
type Settings struct {
	GroupBy     string // naive, radix, parallel or auto
	Threads     int    // worker goroutines for the parallel strategy
	RadixBits   int    // partitions = 2^RadixBits for radix and parallel; -1: derived from the cache sizes
	SumRewrite  bool   // rewrite sum(x + c) to sum(x) + c*count(x)
	MemoryLimit int64  // bytes one query may allocate
	HugePages   bool   // big tables and partitions on huge pages (Linux)
	GenericAgg  bool   // disable the tuned integer-key count(*) path
	// PreAggregate folds rows into a small per-worker table before the
	// radix partitions (see engine/agg/preagg.go).
	PreAggregate bool
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

// settingNames lists the settings SET accepts, for error messages.
const settingNames = "group_by, threads, radix_bits, sum_rewrite, memory_limit, huge_pages, generic_agg, pre_aggregate, counters, default_null_order"

// defaultSettings are a new session's settings: group_by = 'auto', threads
// = GOMAXPROCS (capped by Options.MaxThreads), radix_bits = 'auto' (derived
// from the cache sizes), sum_rewrite = true, memory_limit =
// Options.QueryMemory, huge_pages = true, generic_agg = false,
// pre_aggregate = true.
func (db *DB) defaultSettings() Settings {
	threads := runtime.GOMAXPROCS(0)
	if m := db.opts.MaxThreads; m > 0 && threads > m {
		threads = m
	}
	return Settings{
		GroupBy:      "auto",
		Threads:      threads,
		RadixBits:    -1,
		SumRewrite:   true,
		MemoryLimit:  db.opts.QueryMemory,
		HugePages:    true,
		Counters:     "off",
		PreAggregate: true,
		NullOrder:    "nulls_last",
	}
}

// NewSession returns a session with the default settings.
func (db *DB) NewSession() *Session {
	return &Session{db: db, settings: db.defaultSettings()}
}

// Settings returns the session's current settings.
func (s *Session) Settings() Settings { return s.settings }

// settingName canonicalises a setting's name; ok is false for an unknown one.
func settingName(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "worker_threads":
		return "threads", true
	case "group_by", "threads", "radix_bits", "sum_rewrite", "memory_limit", "huge_pages", "generic_agg", "pre_aggregate", "counters", "default_null_order":
		return n, true
	case "null_order":
		return "default_null_order", true
	}
	return n, false
}

// Set changes one setting by name, as the SQL statement SET name = value.
func (s *Session) Set(name, value string) error {
	v := strings.ToLower(strings.TrimSpace(value))
	n, ok := settingName(name)
	if !ok {
		return fmt.Errorf("unknown setting %q (known: %s)", name, settingNames)
	}
	switch n {
	case "group_by":
		switch v {
		case "naive", "radix", "parallel", "auto":
			s.settings.GroupBy = v
		default:
			return fmt.Errorf("group_by must be 'naive', 'radix', 'parallel' or 'auto', got %q", value)
		}
	case "threads":
		hi := 256
		if m := s.db.opts.MaxThreads; m > 0 {
			hi = m
		}
		t, err := strconv.Atoi(v)
		if err != nil || t < 1 || t > hi {
			return fmt.Errorf("threads must be an integer between 1 and %d, got %q", hi, value)
		}
		s.settings.Threads = t
	case "radix_bits":
		if v == "auto" {
			s.settings.RadixBits = -1
			return nil
		}
		b, err := strconv.Atoi(v)
		if err != nil || b < 0 || b > 16 {
			return fmt.Errorf("radix_bits must be 'auto' or an integer between 0 and 16, got %q", value)
		}
		s.settings.RadixBits = b
	case "sum_rewrite", "huge_pages", "generic_agg", "pre_aggregate":
		var b bool
		switch v {
		case "true", "on", "1":
			b = true
		case "false", "off", "0":
		default:
			return fmt.Errorf("%s must be true or false, got %q", n, value)
		}
		switch n {
		case "sum_rewrite":
			s.settings.SumRewrite = b
		case "huge_pages":
			s.settings.HugePages = b
		case "pre_aggregate":
			s.settings.PreAggregate = b
		default:
			s.settings.GenericAgg = b
		}
	case "counters":
		switch v {
		case "off", "model":
			s.settings.Counters = v
		case "on", "both":
			return fmt.Errorf("counters = %q: perf counters need their cell to run alone, so they are a cell attribute (counters=%s); SET counters takes 'model' or 'off'", value, v)
		default:
			return fmt.Errorf("counters must be 'model' or 'off', got %q", value)
		}
	case "default_null_order":
		// The values and synonyms DuckDB accepts.
		switch v {
		case "nulls_first", "nulls first", "null first", "first":
			s.settings.NullOrder = "nulls_first"
		case "nulls_last", "nulls last", "null last", "last":
			s.settings.NullOrder = "nulls_last"
		case "nulls_first_on_asc_last_on_desc", "sqlite", "mysql":
			s.settings.NullOrder = "nulls_first_on_asc_last_on_desc"
		case "nulls_last_on_asc_first_on_desc", "postgres":
			s.settings.NullOrder = "nulls_last_on_asc_first_on_desc"
		default:
			return fmt.Errorf("default_null_order must be 'nulls_first', 'nulls_last', 'nulls_first_on_asc_last_on_desc' or 'nulls_last_on_asc_first_on_desc', got %q", value)
		}
	case "memory_limit":
		b, err := units.ParseBytes(v)
		if err != nil {
			return fmt.Errorf("memory_limit: %w", err)
		}
		if b > s.db.opts.QueryMemory {
			return fmt.Errorf("memory_limit can be at most %s on this server, got %s", units.HumanBytes(s.db.opts.QueryMemory), value)
		}
		s.settings.MemoryLimit = b
	}
	return nil
}

// Reset restores one setting to its default, as RESET name; the name "all"
// restores every setting (RESET ALL).
func (s *Session) Reset(name string) error {
	def := s.db.defaultSettings()
	if strings.EqualFold(strings.TrimSpace(name), "all") {
		s.settings = def
		return nil
	}
	n, ok := settingName(name)
	if !ok {
		return fmt.Errorf("unknown setting %q (known: %s)", name, settingNames)
	}
	switch n {
	case "group_by":
		s.settings.GroupBy = def.GroupBy
	case "threads":
		s.settings.Threads = def.Threads
	case "radix_bits":
		s.settings.RadixBits = def.RadixBits
	case "sum_rewrite":
		s.settings.SumRewrite = def.SumRewrite
	case "memory_limit":
		s.settings.MemoryLimit = def.MemoryLimit
	case "huge_pages":
		s.settings.HugePages = def.HugePages
	case "generic_agg":
		s.settings.GenericAgg = def.GenericAgg
	case "pre_aggregate":
		s.settings.PreAggregate = def.PreAggregate
	case "counters":
		s.settings.Counters = def.Counters
	case "default_null_order":
		s.settings.NullOrder = def.NullOrder
	}
	return nil
}
