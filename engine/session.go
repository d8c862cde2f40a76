package engine

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/sql"
	"cachebook/engine/storage"
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
	// MaxThreads caps SET threads (0: no cap beyond 256). A shared server
	// sets it so that one learner cannot claim more cores than admitted.
	MaxThreads int
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
		pool = agg.NewPool(opts.ArenaPoolBytes)
	}
	return &DB{opts: opts, catalog: cat, cache: c, pool: pool}, nil
}

// RegisterFile makes an in-memory Parquet file available as table name
// (used by the WebAssembly build, which has no file system).
func (db *DB) RegisterFile(name string, r io.ReaderAt, size int64) error {
	return db.catalog.Register(name, r, size)
}

// Settings are the per-session options changed with SET.
type Settings struct {
	GroupBy     string // naive, radix, parallel or auto
	Threads     int    // worker goroutines for the parallel strategy
	RadixBits   int    // partitions = 2^RadixBits for radix and parallel; -1: derived from the cache sizes
	SumRewrite  bool   // rewrite sum(x + c) to sum(x) + c*count(x)
	MemoryLimit int64  // bytes one query may allocate
	HugePages   bool   // big tables and partitions on huge pages (Linux)
	GenericAgg  bool   // disable the tuned integer-key count(*) path
}

// settingNames lists the settings SET accepts, for error messages.
const settingNames = "group_by, threads, radix_bits, sum_rewrite, memory_limit, huge_pages, generic_agg"

// Session runs statements with its own settings. A Session is not safe for
// concurrent use; use one per notebook kernel session.
type Session struct {
	db       *DB
	settings Settings
}

// NewSession returns a session with default settings: group_by = 'auto',
// threads = GOMAXPROCS, radix_bits = 'auto' (derived from the cache sizes),
// sum_rewrite = true, huge_pages = true.
func (db *DB) NewSession() *Session {
	threads := runtime.GOMAXPROCS(0)
	if m := db.opts.MaxThreads; m > 0 && threads > m {
		threads = m
	}
	return &Session{db: db, settings: Settings{
		GroupBy:     "auto",
		Threads:     threads,
		RadixBits:   -1,
		SumRewrite:  true,
		MemoryLimit: db.opts.QueryMemory,
		HugePages:   true,
	}}
}

// Settings returns the session's current settings.
func (s *Session) Settings() Settings { return s.settings }

// Set changes one setting by name, as the SQL statement SET name = value.
func (s *Session) Set(name, value string) error {
	v := strings.ToLower(strings.TrimSpace(value))
	switch strings.ToLower(name) {
	case "group_by":
		switch v {
		case "naive", "radix", "parallel", "auto":
			s.settings.GroupBy = v
		default:
			return fmt.Errorf("group_by must be 'naive', 'radix', 'parallel' or 'auto', got %q", value)
		}
	case "threads", "worker_threads":
		hi := 256
		if m := s.db.opts.MaxThreads; m > 0 {
			hi = m
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > hi {
			return fmt.Errorf("threads must be an integer between 1 and %d, got %q", hi, value)
		}
		s.settings.Threads = n
	case "radix_bits":
		if v == "auto" {
			s.settings.RadixBits = -1
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 16 {
			return fmt.Errorf("radix_bits must be 'auto' or an integer between 0 and 16, got %q", value)
		}
		s.settings.RadixBits = n
	case "sum_rewrite", "huge_pages", "generic_agg":
		var b bool
		switch v {
		case "true", "on", "1":
			b = true
		case "false", "off", "0":
		default:
			return fmt.Errorf("%s must be true or false, got %q", strings.ToLower(name), value)
		}
		switch strings.ToLower(name) {
		case "sum_rewrite":
			s.settings.SumRewrite = b
		case "huge_pages":
			s.settings.HugePages = b
		default:
			s.settings.GenericAgg = b
		}
	case "memory_limit":
		n, err := parseBytes(v)
		if err != nil {
			return fmt.Errorf("memory_limit: %w", err)
		}
		if n > s.db.opts.QueryMemory {
			return fmt.Errorf("memory_limit can be at most %s on this server, got %s", agg.FormatBytes(s.db.opts.QueryMemory), value)
		}
		s.settings.MemoryLimit = n
	default:
		return fmt.Errorf("unknown setting %q (known: %s)", name, settingNames)
	}
	return nil
}

// parseBytes parses "512MB", "2GiB", "1000000".
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("want a size such as 512MB or 2GiB, got %q", s)
	}
	return int64(f * float64(mult)), nil
}

// Exec parses and runs every ;-separated statement of src in order, stopping
// at the first error. Results of the statements that ran are returned along
// with the error. A *sql.Error carries the position of a syntax or binding
// error. Cancelling ctx stops the running statement between batches.
func (s *Session) Exec(ctx context.Context, src string, hooks *Hooks) ([]*Result, error) {
	stmts, err := sql.Parse(src)
	if err != nil {
		return nil, err
	}
	var results []*Result
	for _, st := range stmts {
		r, err := s.ExecStatement(ctx, st, hooks)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

// ExecStatement runs one statement already parsed with sql.Parse, for
// callers that handle statements one at a time (the CLI times each).
// Error positions are those of the text the statement was parsed from.
func (s *Session) ExecStatement(ctx context.Context, st sql.Statement, hooks *Hooks) (res *Result, err error) {
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
	case *sql.ShowTables:
		return s.showTables()
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
	q, err := s.planSelect(ctx, sel, 0)
	if err != nil {
		return nil, err
	}
	root := q.planTree()
	x := &execCtx{ctx: ctx, hooks: hooks, budget: &agg.Budget{Limit: s.settings.MemoryLimit}, hasher: agg.NewHasher()}
	start := time.Now()
	vecs, n, err := s.run(x, q, root)
	if err != nil {
		return nil, err
	}
	root.Rows = int64(n)
	root.Time = time.Since(start)
	return &Result{Columns: q.cols[:q.nVisible], Vecs: vecs, Rows: n, Plan: root}, nil
}

// relation resolves a FROM clause.
func (s *Session) relation(ctx context.Context, ref sql.TableRef, depth int) (*relation, error) {
	switch r := ref.(type) {
	case nil:
		return &relation{name: "(no table)", rows: 1, node: &PlanNode{Name: "DUMMY_SCAN"},
			load: func(*execCtx, []bool) ([]*vec.Batch, error) {
				return []*vec.Batch{{Len: 1}}, nil
			}}, nil
	case *sql.TableName:
		return s.tableRelation(r.Name, false, r.Pos())
	case *sql.FileRef:
		return s.tableRelation(r.Path, true, r.Pos())
	case *sql.Subquery:
		q, err := s.planSelect(ctx, r.Select, depth+1)
		if err != nil {
			return nil, err
		}
		child := q.planTree()
		rel := &relation{name: r.Alias, cols: q.cols[:q.nVisible], computed: true,
			node: &PlanNode{Name: "SUBQUERY", Detail: []string{"alias: " + r.Alias}, Children: []*PlanNode{child}}}
		rel.load = func(x *execCtx, need []bool) ([]*vec.Batch, error) {
			vecs, n, err := s.run(x, q, child)
			if err != nil {
				return nil, err
			}
			return []*vec.Batch{{Vecs: vecs, Len: n}}, nil
		}
		return rel, nil
	}
	return nil, fmt.Errorf("unsupported FROM clause %T", ref)
}

func (s *Session) tableRelation(name string, isFile bool, pos sql.Pos) (*relation, error) {
	t, err := s.db.catalog.Table(name, isFile)
	if err != nil {
		return nil, posErr(pos, "%v", err)
	}
	rel := &relation{name: t.Name, cols: t.Columns, rows: t.Rows}
	rel.node = &PlanNode{Name: "SEQ_SCAN", Detail: []string{"table: " + t.Name}}
	rel.load = func(x *execCtx, need []bool) ([]*vec.Batch, error) {
		var names []string
		var idx []int
		for i, c := range t.Columns {
			if need[i] {
				names = append(names, c.Name)
				idx = append(idx, i)
			}
		}
		rel.node.Detail = append(rel.node.Detail, "columns: "+strings.Join(names, ", "))
		if len(names) == 0 {
			// count(*) reads no column: one empty batch per row group.
			var out []*vec.Batch
			for _, n := range t.RowGroupRows {
				out = append(out, &vec.Batch{Vecs: make([]*vec.Vector, len(t.Columns)), Len: int(n)})
			}
			return out, nil
		}
		bs, err := s.db.catalog.Load(x.ctx, t, names, nil)
		if err != nil {
			return nil, err
		}
		out := make([]*vec.Batch, len(bs))
		for i, b := range bs {
			wide := &vec.Batch{Vecs: make([]*vec.Vector, len(t.Columns)), Len: b.Len}
			for j, v := range b.Vecs {
				wide.Vecs[idx[j]] = v
			}
			out[i] = wide
		}
		return out, nil
	}
	return rel, nil
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

// explain answers EXPLAIN (the plan) and EXPLAIN ANALYZE (the plan after
// running the statement, with rows and times per operator and phase).
func (s *Session) explain(ctx context.Context, e *sql.Explain, hooks *Hooks) (*Result, error) {
	sel, ok := e.Stmt.(*sql.Select)
	if !ok {
		return nil, posErr(e.Pos(), "EXPLAIN supports SELECT statements only")
	}
	var root *PlanNode
	if e.Analyze {
		r, err := s.selectStmt(ctx, sel, hooks)
		if err != nil {
			return nil, err
		}
		root = r.Plan
	} else {
		q, err := s.planSelect(ctx, sel, 0)
		if err != nil {
			return nil, err
		}
		root = q.planTree()
		if q.grouped {
			if n := findNode(root, "HASH_GROUP_BY"); n != nil && len(q.keys) > 0 && s.settings.GroupBy != "auto" {
				kt := make([]vec.Type, len(q.keys))
				for i, k := range q.keys {
					kt[i] = k.Type()
				}
				c := s.chooseStrategy(q, nil, kt, nil)
				n.Detail = append(n.Detail, "strategy: "+c.describe())
			} else if n != nil && len(q.keys) > 0 {
				n.Detail = append(n.Detail, "strategy: auto (decided when the query runs, from a HyperLogLog estimate of the groups; EXPLAIN ANALYZE shows the choice)")
			}
		}
	}
	lines := emptyVec(vec.String)
	for _, l := range strings.Split(strings.TrimRight(FormatPlan(root, e.Analyze), "\n"), "\n") {
		lines.AppendStr([]byte(l))
	}
	return &Result{Columns: []vec.Column{{Name: "plan", Type: vec.String}}, Vecs: []*vec.Vector{lines}, Rows: lines.Len, Plan: root}, nil
}
