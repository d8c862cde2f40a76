package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"cachebook/engine/sql"
	"cachebook/engine/storage"
)

// A TableBuilder makes a table the first time a statement names it
// (DB.RegisterBuilder). It registers the table on db under the name it
// was registered for (DB.RegisterFile), allocating at most memoryLimit
// bytes (the memory limit of the session whose statement named it) and
// stopping when ctx is done. note is a sentence about the table (how it
// was made, its sizes) that every later statement naming it carries in
// Result.Notes. Statements naming the table wait while it is built; a
// builder that fails is called again by the next statement naming it.
type TableBuilder func(ctx context.Context, db *DB, memoryLimit int64) (note string, err error)

// lazyTable is a table registered with RegisterBuilder.
type lazyTable struct {
	name  string
	build TableBuilder
	sem   chan struct{} // held while building

	mu    sync.Mutex
	built bool   // the builder registered the table
	note  string // the builder's note
}

// RegisterBuilder makes name a table that build makes the first time a
// statement names it, unless the data directory or a registered file
// already has a table of that name, which is used as it is. Table names
// are matched without regard to case, as in queries. The first builder
// registered for a name stays; RegisterBuilder reports whether build
// was registered.
func (db *DB) RegisterBuilder(name string, build TableBuilder) bool {
	db.lazyMu.Lock()
	defer db.lazyMu.Unlock()
	if db.lazy == nil {
		db.lazy = map[string]*lazyTable{}
	}
	key := strings.ToLower(name)
	if db.lazy[key] != nil {
		return false
	}
	db.lazy[key] = &lazyTable{name: name, build: build, sem: make(chan struct{}, 1)}
	return true
}

// lazyTableNamed returns the builder registered for name, or nil.
func (db *DB) lazyTableNamed(name string) *lazyTable {
	db.lazyMu.Lock()
	defer db.lazyMu.Unlock()
	return db.lazy[strings.ToLower(name)]
}

// lazyNames returns the names of the tables registered with
// RegisterBuilder, for "did you mean" hints.
func (db *DB) lazyNames() []string {
	db.lazyMu.Lock()
	defer db.lazyMu.Unlock()
	names := make([]string, 0, len(db.lazy))
	for _, t := range db.lazy {
		names = append(names, t.name)
	}
	return names
}

// hasTable reports whether the catalog itself (data directory or
// registered files) has a table called name, in any case.
func (db *DB) hasTable(name string) bool {
	if _, err := db.catalog.Table(name, false); err == nil {
		return true
	} else if nf := (*storage.NotFoundError)(nil); !errors.As(err, &nf) {
		return true // there is one, if a broken one: the binder reports it
	}
	for _, n := range db.catalog.Names() {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// resolveLazy builds the table name if it is registered with
// RegisterBuilder and the catalog does not have it yet, and adds its
// note to the statement's notes. It is a no-op for any other name, and
// for a table the catalog has (among them the table its builder is
// building, when the builder queries it after registering it).
func (s *Session) resolveLazy(ctx context.Context, name string) error {
	lt := s.db.lazyTableNamed(name)
	if lt == nil {
		return nil
	}
	if lt.noted(s) || s.db.hasTable(lt.name) {
		return nil
	}
	select {
	case lt.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-lt.sem }()
	// Built while this statement waited?
	if lt.noted(s) || s.db.hasTable(lt.name) {
		return nil
	}
	note, err := lt.build(ctx, s.db, s.settings.MemoryLimit)
	if err != nil {
		return fmt.Errorf("building table %s: %w", lt.name, err)
	}
	if !s.db.hasTable(lt.name) {
		return fmt.Errorf("building table %s: the builder did not register it", lt.name)
	}
	lt.mu.Lock()
	lt.built, lt.note = true, note
	lt.mu.Unlock()
	lt.noted(s)
	return nil
}

// noted reports whether lt is built and if so adds its note to the
// notes of the statement s runs.
func (lt *lazyTable) noted(s *Session) bool {
	lt.mu.Lock()
	built, note := lt.built, lt.note
	lt.mu.Unlock()
	if built && note != "" && !slices.Contains(s.notes, note) {
		s.notes = append(s.notes, note)
	}
	return built
}

// Resolve builds the lazily built tables (DB.RegisterBuilder) that the
// statements of src name and returns their notes, without running the
// statements: a caller that times or measures a cell calls it first, so
// that building a table is not part of what it measures. Text that does
// not parse is left for Exec to report.
func (s *Session) Resolve(ctx context.Context, src string) ([]string, error) {
	stmts, err := sql.ParseLimit(ctx, src, s.settings.MemoryLimit, ErrMemoryLimit)
	if err != nil {
		return nil, nil
	}
	s.notes = nil
	for _, st := range stmts {
		if err := s.resolveLazyTables(ctx, st); err != nil {
			return nil, fmt.Errorf("%s: %w", st.Pos(), err)
		}
	}
	return s.notes, nil
}

// resolveLazyTables builds the lazily built tables that st names before
// the statement's clock starts, so that neither its time nor its hooks
// (counters) include the building. The binder resolves the names again
// (tableRelation), finding them built.
func (s *Session) resolveLazyTables(ctx context.Context, st sql.Statement) error {
	var ref func(r sql.TableRef) error
	ref = func(r sql.TableRef) error {
		switch r := r.(type) {
		case *sql.TableName:
			return s.resolveLazy(ctx, r.Name)
		case *sql.Subquery:
			return ref(r.Select.From)
		}
		return nil
	}
	switch st := st.(type) {
	case *sql.Select:
		return ref(st.From)
	case *sql.Describe:
		return ref(st.Table)
	case *sql.Explain:
		return s.resolveLazyTables(ctx, st.Stmt)
	}
	return nil
}
