package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen"
	"cachebook/kernel"
	"cachebook/kernel/sizing"
)

// BrowserCellMemory is the memory one cell may use in the browser: wasm32
// memory is at most 4 GiB, browsers may allow less, and the hits table
// and the garbage collector's slack need room too.
const BrowserCellMemory = 512 << 20

// MaxRows bounds the generated table (rows of hits).
const MaxRows = 20_000_000

// BrowserMemory is the WebAssembly memory the browser's kernel plans for
// in all: the hits table, the keys table of lessons 2 and 3 (its budget
// in kernel/sizing) and one cell (BrowserCellMemory). wasm32 allows
// 4 GiB and desktop browsers on 64-bit hosts grant it; half of it leaves
// room for the page and for tabs that get less.
const BrowserMemory = 2 << 30

// MaxDefaultRows caps the hits table the kernel picks for itself, for the
// time the first load takes: generating 4 M rows took 13–17 s in
// headless Chromium on the shared 2-vCPU VM, 30 s when it was very busy
// (1 M rows: 6 s; 100,000: about 1 s).
const MaxDefaultRows = 4_000_000

// Generating hits takes, at its peak, about hitsGenFixed plus
// hitsGenPerRow bytes of Go heap per row: the Parquet file (94 bytes a
// row) and the row group the writer buffers. Measured under Node (Go
// heap after generating): 1 M rows 208 MiB, 2 M 306 MiB, 4 M 494 MiB.
const (
	hitsGenFixed  = 112 << 20
	hitsGenPerRow = 100
)

// HitsRows is the number of rows of hits whose generation fits in memory
// bytes of heap, in whole millions (at least 100,000, at most MaxRows).
func HitsRows(memory int64) int {
	rows := (memory - hitsGenFixed) / hitsGenPerRow
	switch {
	case rows >= 1_000_000:
		rows -= rows % 1_000_000
	case rows < 100_000:
		rows = 100_000
	}
	return int(min(rows, MaxRows))
}

// DefaultRows is the size of the browser's hits table where the page asks
// for none: what BrowserMemory holds beside one cell and the keys table,
// up to MaxDefaultRows. That is 4 M rows and 0.7 M users, a naive count
// table of 16 MiB for ClickBench Q15, where the 100,000 rows of old (a
// 512 KiB table) sat in any L2 and gave radix nothing to win.
func DefaultRows() int {
	keys := sizing.BrowserBudget(BrowserCellMemory).Memory
	return min(HitsRows(BrowserMemory-BrowserCellMemory-keys), MaxDefaultRows)
}

// genReply describes the generated table.
type genReply struct {
	Rows    int    `json:"rows"`
	Users   int    `json:"users"` // distinct UserIDs
	Bytes   int    `json:"bytes"`
	GenNS   int64  `json:"gen_ns"`
	Order   string `json:"order"`
	Message string `json:"message"`
}

// generate writes the hits table of opts (DefaultRows where opts.Rows is
// 0) into memory. progress, when not nil, is called after each chunk of
// rows with the rows written and the rows in all.
func generate(ctx context.Context, opts gen.Options, progress func(done, total int)) (*chunkedFile, genReply, error) {
	if opts.Rows == 0 {
		opts.Rows = DefaultRows()
	}
	if opts.Rows < 0 || opts.Rows > MaxRows {
		return nil, genReply{}, fmt.Errorf("gen: rows must be between 1 and %d, got %d", MaxRows, opts.Rows)
	}
	opts.Progress = progress
	t0 := time.Now()
	var file chunkedFile
	if err := gen.Write(ctx, &file, opts); err != nil {
		return nil, genReply{}, fmt.Errorf("gen: %w", err)
	}
	d := time.Since(t0)
	users := opts.Users
	if users == 0 {
		users = int(float64(opts.Rows)/gen.UserRowsRatio + 0.5)
	}
	rows, part := opts.Rows, ""
	if opts.To > 0 { // a part of the table: its rows
		rows = opts.To - opts.From
		part = fmt.Sprintf(" (rows %d to %d of %d)", opts.From, opts.To, opts.Rows)
	}
	return &file, genReply{
		Rows: rows, Users: users, Bytes: int(file.Size()), GenNS: int64(d), Order: fmt.Sprint(opts.Order),
		Message: fmt.Sprintf("generated hits: %d rows%s (%d users), %.1f MB of Parquet in %v",
			rows, part, users, float64(file.Size())/1e6, d.Round(time.Millisecond)),
	}, nil
}

// openEngine opens the browser's engine, with no tables yet: one thread,
// queries bounded by BrowserCellMemory.
func openEngine() (*engine.DB, error) {
	db, err := engine.Open(engine.Options{QueryMemory: BrowserCellMemory, MaxThreads: 1})
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	return db, nil
}

// collect runs the garbage collector twice, at load, so that the queries
// reuse the memory the generator freed: otherwise they allocate above the
// generator's high-water mark until the next collection, and WebAssembly
// memory touched for the first time costs them dearly. Twice: the first
// collection only moves the Parquet writer's pooled buffers (sync.Pool)
// to the pools' victim caches.
func collect() {
	runtime.GC()
	runtime.GC()
}

// newTable generates the hits table in memory (DefaultRows where
// opts.Rows is 0) and opens the browser's engine over it.
func newTable(opts gen.Options) (*engine.DB, genReply, error) {
	t0 := time.Now()
	file, info, err := generate(context.Background(), opts, nil)
	if err != nil {
		return nil, genReply{}, err
	}
	db, err := openEngine()
	if err != nil {
		return nil, genReply{}, err
	}
	if err := db.RegisterFile("hits", file, file.Size()); err != nil {
		return nil, genReply{}, fmt.Errorf("register hits: %w", err)
	}
	collect()
	info.GenNS = int64(time.Since(t0))
	return db, info, nil
}

// attach starts the browser's kernel over db — the server's kernel with
// the browser's explicit limits (one thread, BrowserCellMemory, Browser) — and
// subscribes to its one session. keys may be nil (the manager makes one).
func attach(db *engine.DB) (*kernel.Subscription, error) {
	m, err := kernel.NewManager(kernel.ManagerConfig{
		Executor: kernel.Config{
			DB:     db,
			Limits: kernel.Limits{CellMemory: BrowserCellMemory, QueryMemory: BrowserCellMemory, Threads: 1, Browser: true},
		},
		Scheduler:   kernel.NewScheduler(1),
		BufferBytes: 4 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("start kernel: %w", err)
	}
	return m.Attach("browser", 0)
}

// handle decodes one client frame and hands it to the session; what the
// session cannot use is answered with a protocol_error.
func handle(sub *kernel.Subscription, frame []byte) {
	m, err := kernel.Decode(frame, 0)
	if err == nil {
		err = sub.Kernel().Handle(sub, m)
	}
	if err != nil {
		var ph kernel.Header
		if m != nil {
			ph = m.Header
		}
		sub.Send(kernel.NewMessage(kernel.ChannelIOPub, kernel.MsgProtocolError, sub.Kernel().KernelSession(), ph,
			kernel.ProtocolError{Ename: kernel.ErrBadMessage, Evalue: err.Error()}))
	}
}
