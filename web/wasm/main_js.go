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
	"slices"
	"syscall/js"
	"time"

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
	obj.Set("joinHits", js.FuncOf(joinHits))
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

// readGen reads the generator's options from a page's object; with parts
// (> 1) and part, the options make that part of the table (gen.Parts).
func readGen(o js.Value, opts *gen.Options) {
	defer func() {
		parts, part := o.Get("parts"), o.Get("part")
		if parts.Type() != js.TypeNumber || parts.Int() <= 1 || part.Type() != js.TypeNumber || opts.Rows <= 0 {
			return
		}
		ps := gen.Parts(opts.Rows, opts.RowGroupRows, parts.Int())
		if k := part.Int(); k >= 0 && k < len(ps) {
			opts.From, opts.To = ps[k][0], ps[k][1]
		} else {
			opts.From, opts.To = -1, -1 // gen.Write says why
		}
	}()
	if v := o.Get("rows"); v.Type() == js.TypeNumber {
		opts.Rows = v.Int()
	}
	if v := o.Get("order"); v.Type() == js.TypeString {
		opts.Order = v.String()
	}
	if v := o.Get("seed"); v.Type() == js.TypeNumber {
		opts.Seed = int64(v.Int())
	}
	if v := o.Get("rowGroupRows"); v.Type() == js.TypeNumber { // tests: small row groups
		opts.RowGroupRows = v.Int()
	}
}

// generateHits: args = ({rows, order, seed, part, parts, rowGroupRows},
// onProgress). It
// generates the hits table without starting a kernel — the page runs it
// in a worker of its own, beside the kernel's — and resolves with {info,
// bytes}: the table's description (JSON text) and the Parquet file, a
// Uint8Array the page can transfer to the kernel's worker and keep in its
// storage. With parts > 1 it makes part part (from 0) of the table split
// into that many (gen.Parts), which joinHits assembles with the others.
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
			growHeap(opts)
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

// growHeap grows the WebAssembly memory at once to about what generating
// opts takes (a little less), instead of a few megabytes at a time as the
// heap grows: every growth costs V8 a few milliseconds, and the external
// memory it adds makes V8 collect its own heap — under Node, 1 M rows
// grew the memory about 180 times and collected 176 times, together
// about a seventh of the generation's time. The memory is Go's free heap
// afterwards, which the generator fills (Go never gives memory back to
// WebAssembly, so the peak is the same).
func growHeap(opts gen.Options) {
	rows := opts.Rows
	if rows == 0 {
		rows = DefaultRows()
	}
	if opts.To > opts.From && opts.From >= 0 {
		rows = opts.To - opts.From
	}
	b := make([]byte, (hitsGenFixed+int64(rows)*hitsGenPerRow)*7/8)
	runtime.KeepAlive(b)
	b = nil
	runtime.GC()
}

// joinHits: args = (parts, infos): the Uint8Arrays of the parts of one
// hits table that generateHits made, in order, and their descriptions
// (JSON text). It resolves with {segments, info}: the joined Parquet file
// as a list of Uint8Arrays — views of the parts and the few kilobytes of
// new metadata (gen.Join), so that nothing is copied — which registerHits
// takes as one file and the page stores one after the other, and the
// whole table's description.
func joinHits(this js.Value, args []js.Value) any {
	var parts, infos js.Value
	if len(args) > 1 {
		parts, infos = args[0], args[1]
	}
	var executor js.Func
	executor = js.FuncOf(func(this js.Value, pargs []js.Value) any {
		resolve, reject := pargs[0], pargs[1]
		go func() {
			defer executor.Release()
			out, err := join(parts, infos)
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New("joinHits: " + err.Error()))
				return
			}
			resolve.Invoke(out)
		}()
		return nil
	})
	return js.Global().Get("Promise").New(executor)
}

func join(parts, infos js.Value) (js.Value, error) {
	array := js.Global().Get("Array")
	if !array.Call("isArray", parts).Bool() || !array.Call("isArray", infos).Bool() || parts.Length() != infos.Length() || parts.Length() == 0 {
		return js.Value{}, errors.New("want a list of parts and a list of their descriptions")
	}
	files := make([]io.ReaderAt, parts.Length())
	sizes := make([]int64, parts.Length())
	var all genReply
	for k := range files {
		f, err := newJSFile(parts.Index(k))
		if err != nil {
			return js.Value{}, fmt.Errorf("part %d: %w", k, err)
		}
		files[k], sizes[k] = f, f.size
		var g genReply
		if err := json.Unmarshal([]byte(infos.Index(k).String()), &g); err != nil {
			return js.Value{}, fmt.Errorf("part %d: description: %w", k, err)
		}
		if k == 0 {
			all = g
			all.Rows, all.GenNS = 0, 0
		}
		all.Rows += g.Rows
		all.GenNS = max(all.GenNS, g.GenNS)
	}
	spans, err := gen.Join(files, sizes)
	if err != nil {
		return js.Value{}, err
	}
	segments := array.New()
	for _, s := range spans {
		if s.Data != nil {
			u8 := js.Global().Get("Uint8Array").New(len(s.Data))
			js.CopyBytesToJS(u8, s.Data)
			segments.Call("push", u8)
			continue
		}
		segments.Call("push", parts.Index(s.Part).Call("subarray", s.Off, s.Off+s.Len))
	}
	all.Bytes = int(gen.Spans(spans))
	all.Message = fmt.Sprintf("generated hits: %d rows (%d users), %.1f MB of Parquet in %d parts in %v",
		all.Rows, all.Users, float64(all.Bytes)/1e6, len(files), time.Duration(all.GenNS).Round(time.Millisecond))
	meta, err := json.Marshal(all)
	if err != nil {
		return js.Value{}, err
	}
	out := js.Global().Get("Object").New()
	out.Set("segments", segments)
	out.Set("info", string(meta))
	return out, nil
}

// registerHits: args = (bytes, info): bytes a Uint8Array holding a hits
// Parquet file (from generateHits, or the page's storage) or a list of
// them that together hold it (from joinHits), info its description (JSON
// text). The engine reads the file where it lies, in JavaScript's memory,
// so that it costs the WebAssembly heap nothing; a table registered
// earlier (a first, smaller slice) is replaced.
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
		f, err := newJSFile(u8)
		if err != nil {
			return nil, fmt.Errorf("registerHits: %w", err)
		}
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

// jsFile is a Parquet file held in JavaScript Uint8Arrays, one after the
// other, read with copies into Go's memory of only what is read.
type jsFile struct {
	segs []js.Value
	ends []int64 // the file offset where each segment ends
	size int64
}

// newJSFile makes a file of v: a Uint8Array, or a list of them.
func newJSFile(v js.Value) (*jsFile, error) {
	u8 := js.Global().Get("Uint8Array")
	var segs []js.Value
	switch {
	case v.Type() == js.TypeObject && v.InstanceOf(u8):
		segs = []js.Value{v}
	case v.Type() == js.TypeObject && js.Global().Get("Array").Call("isArray", v).Bool():
		for i := range v.Length() {
			s := v.Index(i)
			if s.Type() != js.TypeObject || !s.InstanceOf(u8) {
				return nil, fmt.Errorf("segment %d is not a Uint8Array", i)
			}
			segs = append(segs, s)
		}
	default:
		return nil, errors.New("want a Uint8Array or a list of them")
	}
	f := &jsFile{segs: segs}
	for _, s := range segs {
		f.size += int64(s.Length())
		f.ends = append(f.ends, f.size)
	}
	return f, nil
}

// ReadAt implements io.ReaderAt.
func (f *jsFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("js file: negative offset %d", off)
	}
	n := 0
	for n < len(p) && off < f.size {
		i, _ := slices.BinarySearch(f.ends, off+1)
		start := f.ends[i] - int64(f.segs[i].Length())
		k := int(min(int64(len(p)-n), f.ends[i]-off))
		js.CopyBytesToGo(p[n:n+k], f.segs[i].Call("subarray", off-start, off-start+int64(k)))
		n += k
		off += int64(k)
	}
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
