//go:build js && wasm

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall/js"

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
	obj.Set("goVersion", runtime.Version())
	js.Global().Set("cachebook", obj)
	if ready := js.Global().Get("cachebookReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

// browser is the kernel of one page: a manager with one session and its
// one subscription.
type browser struct {
	sub *kernel.Subscription
}

// start: args = ({rows, order, seed}, onFrame); rows 0 or absent:
// DefaultRows.
func (b *browser) start(this js.Value, args []js.Value) any {
	opts := gen.Options{Order: "shuffled", Seed: 1}
	var onFrame js.Value
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
	if len(args) > 1 && args[1].Type() == js.TypeFunction {
		onFrame = args[1]
	}
	return promise(func() (any, error) {
		if b.sub != nil {
			return nil, errors.New("the kernel is already started")
		}
		if onFrame.IsUndefined() {
			return nil, errors.New("start: want an onFrame function")
		}
		db, info, err := newTable(opts)
		if err != nil {
			return nil, err
		}
		sub, err := attach(db)
		if err != nil {
			return nil, err
		}
		b.sub = sub
		go forward(sub, onFrame)
		return info, nil
	})
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
