package engine

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/sql"
	"cachebook/engine/storage"
	"cachebook/engine/units"
	"cachebook/engine/vec"
)

// Options configures a DB.
type Options struct {
	// DataDir holds the tables: DIR/NAME.parquet is table NAME. It may be
	// empty when tables are only registered in memory.
	DataDir string
	// CacheBytes bounds the memory of cached column vectors (0: 8 GiB).
	CacheBytes int64
	// QueryMemory bounds the memory one query may allocate for hash tables,
	// partitions and results (0: 8 GiB). A query over it fails cleanly.
	QueryMemory int64
	// ArenaPoolBytes bounds the huge-page mappings kept between queries
	// for reuse (0: a quarter of physical memory, between 2 and 8 GiB;
	// negative: keep none).
	ArenaPoolBytes int64
	// OnArenaMapped, if not nil, is called with the change in bytes
	// whenever the huge-page mappings of big hash tables and radix
	// partitions (in use, or kept between queries) grow or shrink. They
	// are outside Go's heap, so a binary that sets the runtime's soft
	// memory limit lowers it by them (cmd/cachebook does): heap and
	// mappings together then stay within what the process may use.
	OnArenaMapped func(delta int64)
	// MaxThreads caps SET threads (0: no cap beyond 256). A shared server
	// sets it so that one learner cannot claim more cores than admitted.
	MaxThreads int
	// SpillToMemory keeps a GROUP BY's spilled partitions in memory
	// instead of temporary files, charged against QueryMemory beside the
	// statement's memory_limit: what the browser's WebAssembly, which has
	// no temporary files, always does. Tests set it natively.
	SpillToMemory bool
	// Cache describes the CPU caches; the auto strategy and the derived
	// radix partition count use it. Zero fields get typical values.
	Cache CacheSizes
}

// CacheSizes are the sizes of one core's view of the cache hierarchy, in
// bytes. The engine cannot measure them itself (it also runs in a browser);
// the kernel passes what the OS or CPUID reports.
type CacheSizes struct {
	L1, L2, L3 int64
}

// ErrMemoryLimit is wrapped by the error of a statement that needed more
// memory than its limit (SET memory_limit, capped by Options.QueryMemory).
var ErrMemoryLimit = agg.ErrMemoryLimit

// DB is a set of tables with a shared column cache. It is safe for
// concurrent use by many sessions.
type DB struct {
	opts    Options
	catalog *storage.Catalog
	cache   CacheSizes
	pool    *agg.Pool

	// noStringPush turns off the scans' string filters tested as their
	// column is read (scanPush), for the tests that compare.
	noStringPush bool
	// noFilterStages turns off the scans' filters evaluated a column at
	// a time (filterStage), for the tests that compare.
	noFilterStages bool

	lazyMu sync.Mutex
	lazy   map[string]*lazyTable // RegisterBuilder's tables by lower-case name
}

// Open returns a DB over opts.DataDir.
func Open(opts Options) (*DB, error) {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 8 << 30
	}
	if opts.QueryMemory <= 0 {
		opts.QueryMemory = 8 << 30
	}
	c := opts.Cache
	if c.L1 <= 0 {
		c.L1 = 32 << 10
	}
	if c.L2 <= 0 {
		c.L2 = 1 << 20
	}
	if c.L3 <= 0 {
		c.L3 = 16 << 20
	}
	cat, err := storage.Open(opts.DataDir, opts.CacheBytes)
	if err != nil {
		return nil, fmt.Errorf("open data directory: %w", err)
	}
	if opts.ArenaPoolBytes == 0 {
		opts.ArenaPoolBytes = agg.DefaultPoolBytes()
	}
	var pool *agg.Pool
	if opts.ArenaPoolBytes > 0 {
		pool = agg.NewPool(opts.ArenaPoolBytes, opts.OnArenaMapped)
	}
	db := &DB{opts: opts, catalog: cat, cache: c, pool: pool}
	// The pool's mappings are not Go memory: a DB dropped without Close
	// would keep them mapped for the life of the process.
	runtime.AddCleanup(db, func(p *agg.Pool) { p.Drain() }, pool)
	return db, nil
}

// Close releases the memory mappings kept for later queries and the data
// directory. Queries must not run on the DB after Close.
func (db *DB) Close() error {
	db.pool.Drain()
	return db.catalog.Close()
}

// RegisterFile makes an in-memory Parquet file available as table name
// (used by the WebAssembly build, which has no file system).
func (db *DB) RegisterFile(name string, r io.ReaderAt, size int64) error {
	return db.catalog.Register(name, r, size)
}

// Session runs statements with its own settings. A Session is not safe for
// concurrent use; use one per notebook kernel session.
type Session struct {
	db       *DB
	settings Settings
	ops      atomic.Uint64 // operator ids handed out (opBase.id)
	notes    []string      // the running statement's Result.Notes
	// forceTwoStep runs every grouped DISTINCT aggregation that can be
	// run in two steps so (distinct_groups.go), for tests.
	forceTwoStep bool
	// forceSplit runs every grouped DISTINCT aggregation with plain
	// aggregates alongside that can be split so (distinct_split.go),
	// for tests.
	forceSplit bool
	// noDenseKeys groups the keys of two-step DISTINCT aggregations
	// themselves, not dense ids of them (dense_keys.go), for tests.
	noDenseKeys bool
	// maxDenseIDs, if positive, replaces the constant maxDenseIDs, for
	// tests.
	maxDenseIDs int
	// maxOneStepGroups, if positive, replaces the constant
	// maxOneStepGroups, for tests.
	maxOneStepGroups int64
	// replan is what the running statement's grouped DISTINCT plans
	// chose and what a failed run of it asks of the next plan.
	replan replan
}

// replan is how a statement's grouped DISTINCT aggregations are planned
// when it runs again after a run failed (Session.selectStmt), and what
// the plan being made chose that such a run may undo. It lasts for one
// statement.
type replan struct {
	// twoStep runs them in two steps: a run in one step passed the
	// memory limit, or found too many groups (retryInTwoSteps,
	// distinct_groups.go), as why says.
	twoStep bool
	why     string
	// noDense groups their keys, not dense ids of them: the ids passed
	// maxDenseIDs or the memory limit (retryWithoutDenseKeys,
	// dense_keys.go).
	noDense bool
	// declined: the plan runs one in one step that could run in two.
	declined bool
	// dense: the plan groups dense ids of the keys of one.
	dense bool
}

// Exec parses and runs every ;-separated statement of src in order, stopping
// at the first error. Results of the statements that ran are returned along
// with the error. A *sql.Error carries the position of a syntax or binding
// error. Cancelling ctx stops the running statement between batches.
func (s *Session) Exec(ctx context.Context, src string, hooks *Hooks) ([]*Result, error) {
	// What the parser builds counts against the memory limit in force
	// when the cell starts (a SET memory_limit in it applies after).
	stmts, err := sql.ParseLimit(ctx, src, s.settings.MemoryLimit, ErrMemoryLimit)
	if err != nil {
		return nil, err
	}
	var results []*Result
	var held int64 // bytes of the results kept so far
	for _, st := range stmts {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		r, err := s.ExecStatement(ctx, st, hooks)
		if err != nil {
			return results, err
		}
		// Every statement's result stays until the cell is done: together
		// they must fit the memory limit too.
		held += resultBytes(r)
		if lim := s.settings.MemoryLimit; lim > 0 && held > lim {
			return results, fmt.Errorf("%s: the results of this cell's statements need more than the memory limit of %s: %w",
				st.Pos(), units.HumanBytes(lim), ErrMemoryLimit)
		}
		results = append(results, r)
	}
	return results, nil
}

// resultBytes is the memory a result holds.
func resultBytes(r *Result) int64 {
	if r == nil {
		return 0
	}
	return 256 + vecBytes(r.Vecs) + int64(len(r.Statement))
}

// ExecStatement runs one statement already parsed with sql.Parse, for
// callers that handle statements one at a time (the CLI times each).
// Error positions are those of the text the statement was parsed from.
func (s *Session) ExecStatement(ctx context.Context, st sql.Statement, hooks *Hooks) (res *Result, err error) {
	s.notes = nil
	if err := s.resolveLazyTables(ctx, st); err != nil {
		return nil, fmt.Errorf("%s: %w", st.Pos(), err)
	}
	start := time.Now()
	if hooks != nil && hooks.LockThreads {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if hooks != nil && hooks.WorkerStart != nil {
		hooks.WorkerStart(0)
	}
	if hooks != nil && hooks.WorkerStop != nil {
		defer hooks.WorkerStop(0)
	}
	defer func() {
		// A bug in an operator must fail the statement, not the server.
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("internal error executing %q: %v", abbreviate(st.Source()), p)
		}
		if res != nil {
			res.Statement = st.Source()
			res.Elapsed = time.Since(start)
			res.Notes = s.notes
		}
	}()
	switch st := st.(type) {
	case *sql.Set:
		val, err := settingValue(st.Value)
		if err != nil {
			return nil, err
		}
		if err := s.Set(st.Name, val); err != nil {
			return nil, posErr(st.Pos(), "%v", err)
		}
		return &Result{Message: "SET"}, nil
	case *sql.Reset:
		name := st.Name
		if st.All {
			name = "all"
		}
		if err := s.Reset(name); err != nil {
			return nil, posErr(st.Pos(), "%v", err)
		}
		return &Result{Message: "RESET"}, nil
	case *sql.ShowTables:
		return s.showTables()
	case *sql.ShowAll:
		return s.showAll(), nil
	case *sql.Describe:
		return s.describe(ctx, st)
	case *sql.Explain:
		return s.explain(ctx, st, hooks)
	case *sql.Select:
		return s.selectStmt(ctx, st, hooks)
	}
	return nil, posErr(st.Pos(), "unsupported statement")
}

func abbreviate(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func settingValue(e sql.Expr) (string, error) {
	switch v := e.(type) {
	case *sql.Literal:
		switch v.Kind {
		case sql.LitString:
			return v.Str, nil
		case sql.LitBool:
			if v.Int != 0 {
				return "true", nil
			}
			return "false", nil
		default:
			return v.Text, nil
		}
	case *sql.Ident:
		return v.Name, nil
	}
	return "", posErr(e.Pos(), "SET needs a constant value, found %s", sql.Format(e))
}

// selectStmt plans and runs a SELECT.
func (s *Session) selectStmt(ctx context.Context, sel *sql.Select, hooks *Hooks) (*Result, error) {
	defer func() { s.replan = replan{} }() // for this statement's runs only
	q, vecs, n, err := s.runSelect(ctx, sel, hooks)
	// Each retry changes the plan for good, so each fires once: a
	// statement run again in two steps may then pass the dense ids.
	for tries := 0; err != nil && tries < 2 && (s.retryWithoutDenseKeys(ctx, err) || s.retryInTwoSteps(ctx, err)); tries++ {
		q, vecs, n, err = s.runSelect(ctx, sel, hooks)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Columns: q.cols[:q.nVisible], Vecs: vecs, Rows: n, Plan: planTree(q.root, true)}, nil
}

// runSelect plans and runs sel, and returns its plan and rows.
func (s *Session) runSelect(ctx context.Context, sel *sql.Select, hooks *Hooks) (*query, []*vec.Vector, int, error) {
	s.replan.declined, s.replan.dense = false, false
	q, err := s.planSelect(ctx, sel, 0)
	if err != nil {
		return nil, nil, 0, err
	}
	x := s.newExec(ctx, hooks, q.root)
	vecs, n, err := collect(x, q.root, q.cols[:q.nVisible])
	return q, vecs, n, err
}

// newExec prepares the execution of the operator tree under root.
func (s *Session) newExec(ctx context.Context, hooks *Hooks, root operator) *execCtx {
	x := &execCtx{ctx: ctx, hooks: hooks, budget: &agg.Budget{Limit: s.settings.MemoryLimit}, hasher: agg.NewHasher(), s: s}
	walk(root, func(op operator) {
		if b := op.base(); b.id == 0 {
			b.id = s.ops.Add(1)
		}
		if sc, ok := op.(*scanOp); ok {
			x.scanTotal += sc.table.Rows
		}
	})
	return x
}

func (s *Session) showTables() (*Result, error) {
	tables, err := s.db.catalog.Tables()
	if err != nil {
		return nil, err
	}
	name := emptyVec(vec.String)
	rows := emptyVec(vec.Int64)
	cols := emptyVec(vec.Int64)
	for _, t := range tables {
		name.AppendStr([]byte(t.Name))
		rows.AppendInt(t.Rows)
		cols.AppendInt(int64(len(t.Columns)))
	}
	return &Result{Columns: []vec.Column{{Name: "name", Type: vec.String}, {Name: "rows", Type: vec.Int64}, {Name: "columns", Type: vec.Int64}},
		Vecs: []*vec.Vector{name, rows, cols}, Rows: len(tables)}, nil
}

// showAll lists every setting (SHOW ALL): its name, its value in this
// session and its default, as SET takes them, its type, aliases and what
// it does; the columns of DuckDB's duckdb_settings() and a default.
func (s *Session) showAll() *Result {
	cols := []vec.Column{{Name: "name", Type: vec.String}, {Name: "value", Type: vec.String}, {Name: "default", Type: vec.String},
		{Name: "input_type", Type: vec.String}, {Name: "aliases", Type: vec.String}, {Name: "description", Type: vec.String}}
	vecs := make([]*vec.Vector, len(cols))
	for i := range vecs {
		vecs[i] = emptyVec(vec.String)
	}
	def := s.db.defaultSettings()
	for _, st := range settingTable {
		for i, v := range []string{st.Name, st.Format(s.settings), st.Format(def), st.Type, strings.Join(st.Aliases, ", "), st.Doc} {
			vecs[i].AppendStr([]byte(v))
		}
	}
	return &Result{Columns: cols, Vecs: vecs, Rows: len(settingTable)}
}

func (s *Session) describe(ctx context.Context, d *sql.Describe) (*Result, error) {
	var cols []vec.Column
	if sub, ok := d.Table.(*sql.Subquery); ok {
		q, err := s.planSelect(ctx, sub.Select, 1)
		if err != nil {
			return nil, err
		}
		cols = q.cols[:q.nVisible]
	} else {
		rel, err := s.relation(ctx, d.Table, 0)
		if err != nil {
			return nil, err
		}
		cols = rel.cols
	}
	name, typ := emptyVec(vec.String), emptyVec(vec.String)
	for _, c := range cols {
		name.AppendStr([]byte(c.Name))
		typ.AppendStr([]byte(c.Type.String()))
	}
	return &Result{Columns: []vec.Column{{Name: "column_name", Type: vec.String}, {Name: "column_type", Type: vec.String}},
		Vecs: []*vec.Vector{name, typ}, Rows: len(cols)}, nil
}
