package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen"
	"cachebook/kernel"
)

// BrowserCellMemory is the memory one cell may use in the browser: wasm32
// memory is at most 4 GiB, browsers may allow less, and the hits table
// and the garbage collector's slack need room too.
const BrowserCellMemory = 512 << 20

// MaxRows bounds the generated table (rows of hits).
const MaxRows = 20_000_000

// genReply describes the generated table.
type genReply struct {
	Rows    int    `json:"rows"`
	Bytes   int    `json:"bytes"`
	GenNS   int64  `json:"gen_ns"`
	Order   string `json:"order"`
	Message string `json:"message"`
}

// newTable generates the hits table in memory and opens the browser's
// engine over it: one thread, queries bounded by BrowserCellMemory.
func newTable(opts gen.Options) (*engine.DB, genReply, error) {
	if opts.Rows <= 0 || opts.Rows > MaxRows {
		return nil, genReply{}, fmt.Errorf("gen: rows must be between 1 and %d, got %d", MaxRows, opts.Rows)
	}
	t0 := time.Now()
	var file chunkedFile
	if err := gen.Write(context.Background(), &file, opts); err != nil {
		return nil, genReply{}, fmt.Errorf("gen: %w", err)
	}
	db, err := engine.Open(engine.Options{QueryMemory: BrowserCellMemory, MaxThreads: 1})
	if err != nil {
		return nil, genReply{}, fmt.Errorf("open engine: %w", err)
	}
	if err := db.RegisterFile("hits", &file, file.Size()); err != nil {
		return nil, genReply{}, fmt.Errorf("register hits: %w", err)
	}
	// Collect the generator's garbage now, at load, so that the queries
	// reuse the memory it frees: otherwise they allocate above the
	// generator's high-water mark until the next collection, and
	// WebAssembly memory touched for the first time costs them dearly.
	// Twice: the first collection only moves the Parquet writer's pooled
	// buffers (sync.Pool) to the pools' victim caches.
	runtime.GC()
	runtime.GC()
	d := time.Since(t0)
	return db, genReply{
		Rows: opts.Rows, Bytes: int(file.Size()), GenNS: int64(d), Order: fmt.Sprint(opts.Order),
		Message: fmt.Sprintf("generated hits: %d rows, %.1f MB of Parquet in %v", opts.Rows, float64(file.Size())/1e6, d.Round(time.Millisecond)),
	}, nil
}

// attach starts the browser's kernel over db — the server's kernel with
// the browser's explicit limits (one thread, BrowserCellMemory) — and
// subscribes to its one session.
func attach(db *engine.DB) (*kernel.Subscription, error) {
	m, err := kernel.NewManager(kernel.ManagerConfig{
		Executor: kernel.Config{
			DB:     db,
			Limits: kernel.Limits{CellMemory: BrowserCellMemory, QueryMemory: BrowserCellMemory, Threads: 1},
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
