//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"syscall/js"

	"cachebook/engine"
	"cachebook/engine/gen"
	"cachebook/kernel"
)

func main() {
	// The heap is mostly the generated Parquet file, which lives as long
	// as the page and holds no pointers: collecting costs little, and
	// Go's default (GOGC=100) would let the heap grow to twice the file
	// before collecting, WebAssembly memory that is never given back.
	// Under Node, 4 M rows, 16 Q15 queries: 571 MiB of heap at GOGC=25,
	// 814 MiB at 100, the queries no slower within the VM's noise. The
	// limit makes the collector work harder, not fail, near BrowserMemory.
	debug.SetGCPercent(25)
	debug.SetMemoryLimit(BrowserMemory)
	obj := js.Global().Get("Object").New()
	var b browser
	obj.Set("start", js.FuncOf(b.start))
	obj.Set("send", js.FuncOf(b.send))
	obj.Set("generateHits", js.FuncOf(generateHits))
	obj.Set("registerHits", js.FuncOf(b.registerHits))
	obj.Set("convert", js.FuncOf(convertJS))
	obj.Set("goVersion", runtime.Version())
	js.Global().Set("cachebook", obj)
	if ready := js.Global().Get("cachebookReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

// browser is the kernel of one page: a manager with one session and its
// one subscription, over db.
type browser struct {
	sub *kernel.Subscription
	db  *engine.DB
}

// start: args = ({rows, order, seed, deferHits, lastLevel}, onFrame,
// onProbe); rows 0 or absent: DefaultRows. With deferHits the kernel
// starts at once with no hits table, which registerHits adds later (the
// page generates it in another worker, or reads it from its storage).
// lastLevel, when positive, is the last cache level the page stored from
// an earlier probe; onProbe, a function, receives what a probe measures.
func (b *browser) start(this js.Value, args []js.Value) any {
	opts := gen.Options{Order: "shuffled", Seed: 1}
	var onFrame, onProbe js.Value
	deferHits := false
	var lastLevel int64
	if len(args) > 0 && args[0].Type() == js.TypeObject {
		o := args[0]
		readGen(o, &opts)
		deferHits = o.Get("deferHits").Truthy()
		if v := o.Get("lastLevel"); v.Type() == js.TypeNumber && v.Float() > 0 {
			lastLevel = int64(v.Float())
		}
	}
	if len(args) > 1 && args[1].Type() == js.TypeFunction {
		onFrame = args[1]
	}
	if len(args) > 2 && args[2].Type() == js.TypeFunction {
		onProbe = args[2]
	}
	return promise(func() (any, error) {
		if b.sub != nil {
			return nil, errors.New("the kernel is already started")
		}
		if onFrame.IsUndefined() {
			return nil, errors.New("start: want an onFrame function")
		}
		var db *engine.DB
		var info genReply
		var err error
		if deferHits {
			db, err = openEngine()
			info.Message = "the kernel runs; the hits table is still loading"
		} else {
			db, info, err = newTable(opts)
		}
		if err != nil {
			return nil, err
		}
		var report func(int64)
		if !onProbe.IsUndefined() {
			report = func(bytes int64) { onProbe.Invoke(float64(bytes)) }
		}
		kernel.RegisterKeysFrom(db, BrowserCellMemory, lastLevel, report)
		sub, err := attach(db)
		if err != nil {
			return nil, err
		}
		b.sub, b.db = sub, db
		go forward(sub, onFrame)
		return startReply{genReply: info, DefaultRows: DefaultRows()}, nil
	})
}

// startReply is start's answer: the table generated (none with
// deferHits) and the rows the page should generate where it asks for none.
type startReply struct {
	genReply
	DefaultRows int `json:"default_rows"`
}

// readGen reads the generator's options from a page's object.
func readGen(o js.Value, opts *gen.Options) {
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

// generateHits: args = ({rows, order, seed}, onProgress). It generates
// the hits table without starting a kernel — the page runs it in a worker
// of its own, beside the kernel's — and resolves with {info, bytes}: the
// table's description (JSON text) and the Parquet file, a Uint8Array the
// page can transfer to the kernel's worker and keep in its storage.
// onProgress(done, total) is called after each chunk of rows.
func generateHits(this js.Value, args []js.Value) any {
	opts := gen.Options{Order: "shuffled", Seed: 1}
	var onProgress js.Value
	if len(args) > 0 && args[0].Type() == js.TypeObject {
		readGen(args[0], &opts)
	}
	if len(args) > 1 && args[1].Type() == js.TypeFunction {
		onProgress = args[1]
	}
	var executor js.Func
	executor = js.FuncOf(func(this js.Value, pargs []js.Value) any {
		resolve, reject := pargs[0], pargs[1]
		go func() {
			defer executor.Release()
			var progress func(done, total int)
			if !onProgress.IsUndefined() {
				progress = func(done, total int) { onProgress.Invoke(done, total) }
			}
			file, info, err := generate(context.Background(), opts, progress)
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New(err.Error()))
				return
			}
			u8 := js.Global().Get("Uint8Array").New(file.Size())
			var off int64
			for _, c := range file.chunks {
				js.CopyBytesToJS(u8.Call("subarray", off, off+int64(len(c))), c)
				off += int64(len(c))
			}
			meta, _ := json.Marshal(info)
			out := js.Global().Get("Object").New()
			out.Set("info", string(meta))
			out.Set("bytes", u8)
			resolve.Invoke(out)
		}()
		return nil
	})
	return js.Global().Get("Promise").New(executor)
}

// registerHits: args = (bytes, info): bytes a Uint8Array holding a hits
// Parquet file (from generateHits, or the page's storage), info its
// description (JSON text). The engine reads the file where it lies, in
// JavaScript's memory, so that it costs the WebAssembly heap nothing; a
// table registered earlier (a first, smaller slice) is replaced.
func (b *browser) registerHits(this js.Value, args []js.Value) any {
	var u8 js.Value
	info := ""
	if len(args) > 0 {
		u8 = args[0]
	}
	if len(args) > 1 && args[1].Type() == js.TypeString {
		info = args[1].String()
	}
	return promise(func() (any, error) {
		if b.db == nil {
			return nil, errors.New("registerHits: the kernel is not started")
		}
		if u8.Type() != js.TypeObject || !u8.InstanceOf(js.Global().Get("Uint8Array")) {
			return nil, errors.New("registerHits: want a Uint8Array")
		}
		f := &jsFile{v: u8, size: int64(u8.Length())}
		if err := b.db.RegisterFile("hits", f, f.size); err != nil {
			return nil, fmt.Errorf("register hits: %w", err)
		}
		var g genReply
		if info != "" {
			if err := json.Unmarshal([]byte(info), &g); err != nil {
				return nil, fmt.Errorf("registerHits: info: %w", err)
			}
		}
		g.Bytes = int(f.size)
		return g, nil
	})
}

// jsFile is a Parquet file held in a JavaScript Uint8Array, read with
// copies into Go's memory of only what is read.
type jsFile struct {
	v    js.Value
	size int64
}

// ReadAt implements io.ReaderAt.
func (f *jsFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("js file: negative offset %d", off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), f.size-off))
	js.CopyBytesToGo(p[:n], f.v.Call("subarray", off, off+int64(n)))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// forward hands every frame of sub to the page.
func forward(sub *kernel.Subscription, onFrame js.Value) {
	onFrame.Invoke(string(sub.Welcome))
	for _, f := range sub.Replay {
		onFrame.Invoke(string(f))
	}
	for f := range sub.C {
		onFrame.Invoke(string(f))
	}
}

// send: args = (frame). It returns at once; the kernel answers through
// onFrame.
func (b *browser) send(this js.Value, args []js.Value) any {
	if b.sub == nil || len(args) == 0 || args[0].Type() != js.TypeString {
		return false
	}
	frame := []byte(args[0].String())
	sub := b.sub
	go handle(sub, frame)
	return true
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

// convertJS: args = (op, name, text); it resolves with convert's answer,
// as JSON text (a string).
func convertJS(this js.Value, args []js.Value) any {
	var op, name, text string
	for i, p := range []*string{&op, &name, &text} {
		if len(args) > i && args[i].Type() == js.TypeString {
			*p = args[i].String()
		}
	}
	return promise(func() (any, error) { return convert(op, name, text) })
}
