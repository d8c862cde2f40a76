//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen"
)

// yieldEvery is how often a running query gives the event loop a chance to
// deliver a cancel message.
const yieldEvery = 50 * time.Millisecond

// kernel is the state behind the exported JavaScript functions.
type kernel struct {
	mu     sync.Mutex
	db     *engine.DB
	sess   *engine.Session
	cancel context.CancelFunc
	funcs  []js.Func
}

func main() {
	k := &kernel{}
	obj := js.Global().Get("Object").New()
	k.export(obj, "gen", k.gen)
	k.export(obj, "exec", k.exec)
	k.export(obj, "measure", k.measure)
	k.export(obj, "cancel", k.cancelRun)
	k.export(obj, "reset", k.reset)
	obj.Set("goVersion", js.ValueOf(goVersion()))
	js.Global().Set("cachebook", obj)
	if ready := js.Global().Get("cachebookReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

// export binds f as obj[name].
func (k *kernel) export(obj js.Value, name string, f func(this js.Value, args []js.Value) any) {
	fn := js.FuncOf(f)
	k.funcs = append(k.funcs, fn)
	obj.Set(name, fn)
}

// promise runs work on its own goroutine and returns a JavaScript Promise
// settled with work's JSON answer or rejected with its error.
func promise(work func() (any, error)) js.Value {
	var executor js.Func
	executor = js.FuncOf(func(this js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		go func() {
			defer executor.Release()
			v, err := work()
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New(err.Error()))
				return
			}
			b, err := json.Marshal(v)
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New(fmt.Sprintf("encode reply: %v", err)))
				return
			}
			resolve.Invoke(string(b))
		}()
		return nil
	})
	return js.Global().Get("Promise").New(executor)
}

// genReply describes a generated table.
type genReply struct {
	Rows    int    `json:"rows"`
	Bytes   int    `json:"bytes"`
	GenNS   int64  `json:"gen_ns"`
	Order   string `json:"order"`
	Message string `json:"message"`
}

// gen generates the hits table: args[0] = {rows, order, seed}.
func (k *kernel) gen(this js.Value, args []js.Value) any {
	opts := gen.Options{Rows: 100_000, Order: "shuffled", Seed: 1}
	if len(args) > 0 && args[0].Type() == js.TypeObject {
		o := args[0]
		if v := o.Get("rows"); v.Type() == js.TypeNumber {
			opts.Rows = v.Int()
		}
		if v := o.Get("order"); v.Type() == js.TypeString {
			opts.Order = v.String()
		}
		if v := o.Get("seed"); v.Type() == js.TypeNumber {
			opts.Seed = int64(v.Int())
		}
	}
	return promise(func() (any, error) {
		if opts.Rows <= 0 || opts.Rows > 20_000_000 {
			return nil, fmt.Errorf("gen: rows must be between 1 and 20000000, got %d", opts.Rows)
		}
		start := time.Now()
		var buf bytes.Buffer
		if err := gen.Write(context.Background(), &buf, opts); err != nil {
			return nil, fmt.Errorf("gen: %w", err)
		}
		db, err := engine.Open(engine.Options{})
		if err != nil {
			return nil, fmt.Errorf("open engine: %w", err)
		}
		b := buf.Bytes()
		if err := db.RegisterFile("hits", bytes.NewReader(b), int64(len(b))); err != nil {
			return nil, fmt.Errorf("register hits: %w", err)
		}
		k.mu.Lock()
		k.db, k.sess = db, db.NewSession()
		k.mu.Unlock()
		d := time.Since(start)
		return genReply{
			Rows: opts.Rows, Bytes: len(b), GenNS: int64(d), Order: fmt.Sprint(opts.Order),
			Message: fmt.Sprintf("generated hits: %d rows, %.1f MB of Parquet in %v", opts.Rows, float64(len(b))/1e6, d.Round(time.Millisecond)),
		}, nil
	})
}

// exec runs args[0] (SQL); args[1], if a function, receives (done, total)
// progress about every 100 ms.
func (k *kernel) exec(this js.Value, args []js.Value) any {
	if len(args) == 0 || args[0].Type() != js.TypeString {
		return promise(func() (any, error) { return nil, errors.New("exec: want a SQL string") })
	}
	src := args[0].String()
	var onProgress js.Value
	if len(args) > 1 && args[1].Type() == js.TypeFunction {
		onProgress = args[1]
	}
	return promise(func() (any, error) {
		k.mu.Lock()
		sess := k.sess
		k.mu.Unlock()
		if sess == nil {
			return nil, errors.New("no table yet: generate the hits table first")
		}
		ctx, done, err := k.begin()
		if err != nil {
			return nil, err
		}
		defer done()

		start := time.Now()
		lastYield, lastReport := start, time.Time{}
		hooks := &engine.Hooks{Progress: func(done, total int64) {
			now := time.Now()
			if !onProgress.IsUndefined() && now.Sub(lastReport) >= 100*time.Millisecond {
				lastReport = now
				onProgress.Invoke(float64(done), float64(total))
			}
			if now.Sub(lastYield) >= yieldEvery {
				// Let the event loop run so a cancel message reaches us.
				time.Sleep(time.Millisecond)
				lastYield = time.Now()
			}
		}}
		res, err := sess.Exec(ctx, src, hooks)
		cancelled := ctx.Err() != nil
		return encodeExec(res, err, src, cancelled, time.Since(start)), nil
	})
}

// begin starts a cancellable run; done must be called when it ends.
func (k *kernel) begin() (ctx context.Context, done func(), err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel != nil {
		return nil, nil, errors.New("a cell is already running")
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	return ctx, func() {
		k.mu.Lock()
		k.cancel = nil
		k.mu.Unlock()
		cancel()
	}, nil
}

// cancelRun cancels the running query, if any; it returns whether one ran.
func (k *kernel) cancelRun(this js.Value, args []js.Value) any {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel == nil {
		return false
	}
	k.cancel()
	return true
}

// reset starts a new session with default settings on the same tables.
func (k *kernel) reset(this js.Value, args []js.Value) any {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.db != nil {
		k.sess = k.db.NewSession()
	}
	return nil
}
