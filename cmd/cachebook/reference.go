package main

import (
	"context"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"

	"cachebook/engine"
	"cachebook/kernel/perf"
	"cachebook/lessons"
	"cachebook/notebook"
)

// referenceMachine describes this machine and the data in dir for a
// lesson's reference outputs (lessons.Machine).
func referenceMachine(dir string) lessons.Machine {
	a := perf.Probe()
	m := lessons.Machine{
		CPU:      strings.TrimSpace(cpuid.CPU.BrandName),
		Cores:    runtime.NumCPU(),
		OS:       runtime.GOOS + "/" + runtime.GOARCH,
		Date:     time.Now().UTC().Format("2006-01-02"),
		Data:     "no data",
		Modelled: "figures labelled modelled come from the engine's cache model (engine/cachesim), not from counters",
	}
	if m.CPU == "" {
		m.CPU = a.CPU.Brand
	}
	switch {
	case a.Hardware.Available:
		m.Counters = "measured (hardware performance counters)"
	case a.Hardware.Reason != nil:
		m.Counters = "not measured (" + a.Hardware.Reason.Message + ")"
	default:
		m.Counters = "not measured"
	}
	if db, err := openEngine(engine.Options{DataDir: dir}); err == nil {
		if res, err := db.NewSession().Exec(context.Background(), "SELECT count(*) FROM hits", nil); err == nil && len(res) == 1 && res[0].Rows == 1 {
			m.Data = "the demo table hits: " + thousands(res[0].Vecs[0].Format(0)) + " rows (make data: shuffled, seed 1)"
		}
	}
	return m
}

// writeReference saves the outputs of nb, which has just run, as a
// lesson's reference outputs.
func writeReference(path string, nb *notebook.Notebook, dir string) error {
	ref, err := lessons.NewReference(nb, referenceMachine(dir))
	if err != nil {
		return err
	}
	b, err := ref.Encode()
	if err != nil {
		return err
	}
	return writeOutput(path, b, nil)
}

// thousands groups the digits of a whole number: "2000000" → "2,000,000".
func thousands(n string) string {
	for i := len(n) - 3; i > 0; i -= 3 {
		n = n[:i] + "," + n[i:]
	}
	return n
}
