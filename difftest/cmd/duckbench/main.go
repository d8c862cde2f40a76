// Command duckbench is DuckDB's side of `cachebook bench`: a long-lived
// process that loads Parquet files into DuckDB tables in memory and times
// queries on request, so that the benchmark can alternate repetitions of
// our engine and DuckDB on the same data in one run.
//
// It speaks JSON lines on stdin and stdout; see difftest/PROTOCOL.md. Every
// request gets exactly one reply line, in order; diagnostics go to stderr.
//
// Usage:
//
//	duckbench [-threads N] [-memory-limit 8GB]
//	duckbench [-threads N] [-memory-limit 4GB] [-temp-directory DIR] -parquet hits.parquet -query SQL
//
// With -query it answers one query over a view hits of the -parquet file (as
// ClickBench's duckdb-parquet setup reads it), prints one JSON reply line
// with its time and row count, and exits: 0 when the query answered, 1
// when it failed. scripts/big-run.sh uses this mode to run each query in a
// fresh process, as it runs cachebook's.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cachebook/difftest"
)

// ProtocolVersion is sent in the hello line; it changes when a request or
// reply changes incompatibly.
const ProtocolVersion = 1

// maxLine bounds one request line.
const maxLine = 16 << 20

func main() {
	threads := flag.Int("threads", 0, "initial DuckDB threads (0: DuckDB's default, one per core)")
	memLimit := flag.String("memory-limit", "", "DuckDB memory_limit, e.g. 8GB (empty: DuckDB's default)")
	tempDir := flag.String("temp-directory", "", "DuckDB temp_directory for spilling (empty: DuckDB's default)")
	parquet := flag.String("parquet", "", "with -query: the hits Parquet file")
	query := flag.String("query", "", "answer this one query over a view hits of -parquet, print one reply line and exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *query != "" {
		if err := runOne(ctx, os.Stdout, *threads, *memLimit, *tempDir, *parquet, *query); err != nil {
			fmt.Fprintln(os.Stderr, "duckbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Stdin, os.Stdout, *threads, *memLimit); err != nil {
		fmt.Fprintln(os.Stderr, "duckbench:", err)
		os.Exit(1)
	}
}

// Request is one line of input. Op selects the operation; the other
// fields belong to particular operations.
type Request struct {
	ID json.RawMessage `json:"id,omitempty"`
	Op string          `json:"op"`
	// load
	Parquet string   `json:"parquet,omitempty"`
	Table   string   `json:"table,omitempty"`
	Raw     bool     `json:"raw,omitempty"`
	Columns []string `json:"columns,omitempty"` // load only these columns (all when empty)
	// query and exec
	SQL        string `json:"sql,omitempty"`
	Threads    int    `json:"threads,omitempty"`
	ReturnRows int    `json:"return_rows,omitempty"`
	TimeoutMS  int64  `json:"timeout_ms,omitempty"`
}

// Reply is one line of output.
type Reply struct {
	ID       json.RawMessage `json:"id,omitempty"`
	Op       string          `json:"op,omitempty"`
	OK       bool            `json:"ok"`
	Error    string          `json:"error,omitempty"`
	NS       int64           `json:"ns,omitempty"`
	Rows     *int64          `json:"rows,omitempty"`
	Columns  []string        `json:"columns,omitempty"`
	Result   [][]*string     `json:"result,omitempty"`
	DuckDB   string          `json:"duckdb,omitempty"`
	Protocol int             `json:"protocol,omitempty"`
	Threads  int             `json:"threads,omitempty"`
}

// server holds the DuckDB database of one duckbench process.
type server struct {
	db   *sql.DB
	conn *sql.Conn
}

// run serves requests from in until a quit request or the end of input.
func run(ctx context.Context, in io.Reader, out io.Writer, threads int, memLimit string) error {
	s, err := newServer(ctx, threads, memLimit)
	if err != nil {
		return err
	}
	defer s.close()
	return s.serve(ctx, in, out)
}

// runOne answers sql over a view hits of the parquet file in a fresh
// database and writes one reply line to out: ok with ns, rows and the first
// row, or the error. The error is also returned, so that the exit status
// says whether the query answered.
func runOne(ctx context.Context, out io.Writer, threads int, memLimit, tempDir, parquet, sql string) error {
	rep, err := one(ctx, threads, memLimit, tempDir, parquet, sql)
	if err != nil {
		rep = &Reply{Error: err.Error()}
	} else {
		rep.OK = true
	}
	rep.Op = "query"
	b, jerr := json.Marshal(rep)
	if jerr != nil {
		return jerr
	}
	if _, werr := out.Write(append(b, '\n')); werr != nil {
		return fmt.Errorf("write reply: %w", werr)
	}
	return err
}

func one(ctx context.Context, threads int, memLimit, tempDir, parquet, sql string) (*Reply, error) {
	if parquet == "" {
		return nil, errors.New("-query needs -parquet")
	}
	s, err := newServer(ctx, threads, memLimit)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if tempDir != "" {
		if _, err := s.conn.ExecContext(ctx, "SET temp_directory = "+difftest.SQLString(tempDir)); err != nil {
			return nil, fmt.Errorf("duckdb: temp_directory: %w", err)
		}
	}
	q := fmt.Sprintf("CREATE OR REPLACE VIEW hits AS %s", difftest.HitsSource(parquet))
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		return nil, fmt.Errorf("duckdb: create view hits: %w", err)
	}
	rep, err := s.query(ctx, &Request{SQL: sql, ReturnRows: 1})
	if err != nil {
		return nil, err
	}
	if err := s.conn.QueryRowContext(ctx, "SELECT version()").Scan(&rep.DuckDB); err != nil {
		return nil, fmt.Errorf("duckdb: version: %w", err)
	}
	return rep, nil
}

// newServer opens an in-memory DuckDB database with one connection.
func newServer(ctx context.Context, threads int, memLimit string) (*server, error) {
	db, err := difftest.OpenDuck(ctx, threads)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	s := &server{db: db, conn: conn}
	if memLimit != "" {
		if _, err := conn.ExecContext(ctx, "SET memory_limit = "+difftest.SQLString(memLimit)); err != nil {
			s.close()
			return nil, fmt.Errorf("duckdb: memory_limit: %w", err)
		}
	}
	return s, nil
}

func (s *server) close() {
	s.conn.Close()
	s.db.Close()
}

// serve sends the hello line, then answers each request line of in.
func (s *server) serve(ctx context.Context, in io.Reader, out io.Writer) error {
	conn := s.conn
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	send := func(r *Reply) error {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write reply: %w", err)
		}
		return w.Flush()
	}
	hello := &Reply{Op: "hello", OK: true, Protocol: ProtocolVersion}
	if err := conn.QueryRowContext(ctx, "SELECT version()").Scan(&hello.DuckDB); err != nil {
		return fmt.Errorf("duckdb: version: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&hello.Threads); err != nil {
		return fmt.Errorf("duckdb: threads: %w", err)
	}
	if err := send(hello); err != nil {
		return err
	}

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var req Request
		var rep *Reply
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			rep = &Reply{Error: fmt.Sprintf("bad request: %v", err)}
		} else {
			rep = s.handle(ctx, &req)
			rep.ID, rep.Op = req.ID, req.Op
		}
		if err := send(rep); err != nil {
			return err
		}
		if req.Op == "quit" {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	return nil
}

func (s *server) handle(ctx context.Context, req *Request) *Reply {
	var rep *Reply
	var err error
	switch req.Op {
	case "load":
		rep, err = s.load(ctx, req)
	case "query":
		rep, err = s.query(ctx, req)
	case "exec":
		if req.SQL == "" {
			err = errors.New("exec: empty sql")
			break
		}
		_, err = s.conn.ExecContext(ctx, req.SQL)
		rep = &Reply{}
	case "quit":
		rep = &Reply{}
	case "":
		err = errors.New("missing op")
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		return &Reply{Error: err.Error()}
	}
	rep.OK = true
	return rep
}

// load creates req.Table in memory from req.Parquet, with only req.Columns
// when that is set. Unless req.Raw is
// set, strings are read from BYTE_ARRAY columns and an integer EventDate
// column becomes a DATE, as ClickBench's DuckDB setup does.
func (s *server) load(ctx context.Context, req *Request) (*Reply, error) {
	if req.Parquet == "" || req.Table == "" {
		return nil, errors.New("load: parquet and table are required")
	}
	src := fmt.Sprintf("SELECT * FROM read_parquet(%s, binary_as_string=True)", difftest.SQLString(req.Parquet))
	if !req.Raw {
		var typ sql.NullString
		err := s.conn.QueryRowContext(ctx, fmt.Sprintf(
			"SELECT any_value(column_type) FROM (DESCRIBE %s) WHERE column_name = 'EventDate'", src)).Scan(&typ)
		if err != nil {
			return nil, fmt.Errorf("load: describe %s: %w", req.Parquet, err)
		}
		if typ.Valid && strings.Contains(typ.String, "INT") {
			src = difftest.HitsSource(req.Parquet)
		}
	}
	if len(req.Columns) > 0 {
		cols := make([]string, len(req.Columns))
		for i, c := range req.Columns {
			cols[i] = difftest.SQLIdent(c)
		}
		src = fmt.Sprintf("SELECT %s FROM (%s)", strings.Join(cols, ", "), src)
	}
	start := time.Now()
	q := fmt.Sprintf("CREATE OR REPLACE TABLE %s AS %s", difftest.SQLIdent(req.Table), src)
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	ns := time.Since(start).Nanoseconds()
	var n int64
	if err := s.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+difftest.SQLIdent(req.Table)).Scan(&n); err != nil {
		return nil, fmt.Errorf("load: count: %w", err)
	}
	return &Reply{NS: ns, Rows: &n}, nil
}

// query sets the thread count, then times req.SQL from submission until
// its last row has been read and converted.
func (s *server) query(ctx context.Context, req *Request) (*Reply, error) {
	if req.SQL == "" {
		return nil, errors.New("query: empty sql")
	}
	if req.Threads < 0 || req.ReturnRows < 0 || req.TimeoutMS < 0 {
		return nil, errors.New("query: threads, return_rows and timeout_ms must not be negative")
	}
	if req.Threads > 0 {
		if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("SET threads = %d", req.Threads)); err != nil {
			return nil, fmt.Errorf("query: set threads: %w", err)
		}
	}
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	rep := &Reply{}
	var n int64
	start := time.Now()
	rows, err := s.conn.QueryContext(ctx, req.SQL)
	if err != nil {
		if req.TimeoutMS > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The deadline can pass before DuckDB starts (the driver then
			// returns the context's error) or while it runs (DuckDB reports
			// an interrupt); say the same in both cases.
			return nil, fmt.Errorf("query: interrupted after timeout_ms=%d: %w", req.TimeoutMS, err)
		}
		return nil, fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	cols := make([]string, len(cts))
	isDate := make([]bool, len(cts))
	for i, ct := range cts {
		cols[i] = ct.Name()
		isDate[i] = ct.DatabaseTypeName() == "DATE"
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("query: scan: %w", err)
		}
		if int(n) < req.ReturnRows {
			rep.Result = append(rep.Result, formatRow(vals, isDate))
		}
		n++
	}
	if err := rows.Err(); err != nil {
		if req.TimeoutMS > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("query: interrupted after timeout_ms=%d: %w", req.TimeoutMS, err)
		}
		return nil, fmt.Errorf("query: %w", err)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	rep.NS = time.Since(start).Nanoseconds()
	rep.Rows = &n
	rep.Columns = cols
	return rep, nil
}

// formatRow renders values as text: integers in full, floats with the
// shortest exact representation, dates as YYYY-MM-DD, timestamps as
// YYYY-MM-DD HH:MM:SS[.ffffff] (UTC), NULL as a JSON null. isDate marks
// DATE columns.
func formatRow(vals []any, isDate []bool) []*string {
	out := make([]*string, len(vals))
	for i, v := range vals {
		var s string
		switch x := difftest.Normalize(v).(type) {
		case nil:
			continue
		case int64:
			s = strconv.FormatInt(x, 10)
		case uint64:
			s = strconv.FormatUint(x, 10)
		case *big.Int:
			s = x.String()
		case float64:
			s = strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			s = strconv.FormatBool(x)
		case string:
			s = x
		case time.Time:
			if isDate[i] {
				s = x.Format("2006-01-02")
			} else {
				s = x.Format("2006-01-02 15:04:05.999999")
			}
		default:
			s = fmt.Sprint(x)
		}
		out[i] = &s
	}
	return out
}
