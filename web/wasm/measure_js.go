//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"time"

	"cachebook/engine/units"
	"cachebook/kernel/bandwidth"
	"cachebook/kernel/latency"
)

// browserMaxBytes caps the working sets in the browser: wasm32 memory is
// at most 4 GiB and browsers may allow less.
const browserMaxBytes = 512 << 20

// measure runs a latency or bandwidth cell: args = (kind, source, attrs
// object, onProgress). The reply is {"kind": kind, kind: report} like the
// server's application/vnd.cachebook.measurement+json, or {"error": ...}.
func (k *kernel) measure(this js.Value, args []js.Value) any {
	if len(args) < 2 || args[0].Type() != js.TypeString || args[1].Type() != js.TypeString {
		return promise(func() (any, error) { return nil, errors.New("measure: want (kind, source, attrs, onProgress)") })
	}
	kind, src := args[0].String(), args[1].String()
	attrs := map[string]string{}
	if len(args) > 2 && args[2].Type() == js.TypeObject {
		keys := js.Global().Get("Object").Call("keys", args[2])
		for i := 0; i < keys.Length(); i++ {
			key := keys.Index(i).String()
			attrs[key] = args[2].Get(key).String()
		}
	}
	var onProgress js.Value
	if len(args) > 3 && args[3].Type() == js.TypeFunction {
		onProgress = args[3]
	}
	progress := func(done, total int) {
		if !onProgress.IsUndefined() {
			onProgress.Invoke(done, total)
		}
		time.Sleep(time.Millisecond) // let a cancel message in
	}
	return promise(func() (any, error) {
		ctx, done, err := k.begin()
		if err != nil {
			return nil, err
		}
		defer done()
		start := time.Now()
		var v any
		switch kind {
		case "latency":
			v, err = runLatency(ctx, attrs, src, progress)
		case "bandwidth":
			v, err = runBandwidth(ctx, attrs, src, progress)
		default:
			err = fmt.Errorf("%q cells run only on the server", kind)
		}
		el := time.Since(start).Nanoseconds()
		if err != nil {
			ename := "ExecutionError"
			if ctx.Err() != nil {
				ename = "Interrupted"
			}
			return map[string]any{"error": errorInfo{Ename: ename, Evalue: err.Error()}, "timings": timings{RunNS: el, TotalNS: el}}, nil
		}
		return map[string]any{"kind": kind, kind: v, "timings": timings{RunNS: el, TotalNS: el}}, nil
	})
}

func runLatency(ctx context.Context, attrs map[string]string, src string, progress func(done, total int)) (*latency.Result, error) {
	p, err := params(attrs, src, "min", "max", "ppo", "reps", "sample", "seed", "huge")
	if err != nil {
		return nil, err
	}
	cfg := latency.Config{MaxBytes: 64 << 20, PointsPerOctave: 2, Reps: 3}
	for key, v := range p {
		switch key {
		case "min":
			cfg.MinBytes, err = units.ParseBytes(v)
		case "max":
			cfg.MaxBytes, err = units.ParseBytes(v)
		case "ppo":
			cfg.PointsPerOctave, err = boundedInt(v, 1, 16)
		case "reps":
			cfg.Reps, err = boundedInt(v, 1, 100)
		case "sample":
			cfg.SampleTime, err = time.ParseDuration(v)
		case "huge": // no huge pages in WebAssembly
		}
		if err != nil {
			return nil, fmt.Errorf("parameter %s=%s: %w", key, v, err)
		}
	}
	if cfg.MaxBytes > browserMaxBytes {
		cfg.MaxBytes = browserMaxBytes
	}
	cfg.Progress = func(_ latency.Point, done, total int) { progress(done, total) }
	return latency.Run(ctx, cfg)
}

func runBandwidth(ctx context.Context, attrs map[string]string, src string, progress func(done, total int)) (*bandwidth.Report, error) {
	p, err := params(attrs, src, "bytes", "threads", "ops", "reps")
	if err != nil {
		return nil, err
	}
	cfg := bandwidth.Config{Bytes: 64 << 20, Threads: []int{1}, Reps: 3}
	for key, v := range p {
		switch key {
		case "bytes":
			cfg.Bytes, err = units.ParseBytes(v)
		case "threads":
			// Go WebAssembly has one thread: more goroutines only take turns.
			if v != "1" {
				err = errors.New("the browser runs Go WebAssembly on one thread; use threads=1 or run on the server")
			}
		case "ops":
			cfg.Ops, err = parseOps(v)
		case "reps":
			cfg.Reps, err = boundedInt(v, 1, 100)
		}
		if err != nil {
			return nil, fmt.Errorf("parameter %s=%s: %w", key, v, err)
		}
	}
	if cfg.Bytes > browserMaxBytes/2 {
		cfg.Bytes = browserMaxBytes / 2
	}
	cfg.Progress = func(_ bandwidth.Result, done, total int) { progress(done, total) }
	return bandwidth.Run(ctx, cfg)
}

func parseOps(list string) ([]bandwidth.Op, error) {
	var ops []bandwidth.Op
	for _, s := range strings.Split(list, ",") {
		op, err := bandwidth.ParseOp(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}
