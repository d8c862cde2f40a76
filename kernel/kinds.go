package kernel

import (
	"cachebook/kernel/experiment"
	"cachebook/kernel/param"
)

// Runtimes a cell kind can run in.
const (
	// RuntimeServer is the native kernel behind cachebook serve.
	RuntimeServer = "server"
	// RuntimeBrowser is the same kernel compiled to WebAssembly, in the
	// page's Web Worker (one thread, a bounded heap).
	RuntimeBrowser = "browser"
)

var bothRuntimes = []string{RuntimeServer, RuntimeBrowser}

// KindInfo describes one cell kind to clients: kernel_info_reply lists
// them, so that the UI needs no list of its own.
type KindInfo struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Runtimes are the runtimes whose kernel can run the kind.
	Runtimes []string `json:"runtimes"`
	// Params are the kind's parameters (measurement kinds).
	Params []param.Param `json:"params,omitempty"`
	// Experiments lists the experiments, for the experiment kind.
	Experiments []experiment.Spec `json:"experiments,omitempty"`
	// Note says what some runtime limits, e.g. "in the browser: one thread".
	Note string `json:"note,omitempty"`
}

// Describer is implemented by runners that describe their kind; a runner
// that does not is listed by name only, as runnable here.
type Describer interface {
	Info() KindInfo
}

// DefaultRegistry returns a registry with every runner this build has.
// This is the one list of cell kinds: a new kind is a Runner (with Info)
// registered here; kernel_info tells clients about it.
func DefaultRegistry() *Registry {
	r := NewRegistry()
	r.Register(KindSQL, NewSQLRunner())
	r.Register(KindLatency, LatencyRunner{})
	r.Register(KindBandwidth, BandwidthRunner{})
	r.Register(KindSweep, SweepRunner{})
	r.Register(KindExperiment, ExperimentRunner{})
	r.Register(KindCachesim, CachesimRunner{})
	return r
}

// Info describes every registered kind, in the order of Kinds.
func (r *Registry) Info() []KindInfo {
	var out []KindInfo
	for _, k := range r.Kinds() {
		run, _ := r.Lookup(k)
		info := KindInfo{Name: k, Runtimes: []string{RuntimeServer}}
		if d, ok := run.(Describer); ok {
			info = d.Info()
			info.Name = k
		}
		out = append(out, info)
	}
	return out
}
