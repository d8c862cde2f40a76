//go:build !linux

package perf

import "runtime"

const rusageAvailable = false

// unavailableHere is the reason nothing can be counted on this platform.
func unavailableHere() Reason {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		return Reason{Code: ReasonBrowser, Message: "performance counters are not reachable from WebAssembly in a browser"}
	}
	return Reason{Code: ReasonNotLinux, Message: "performance counters need Linux perf_event_open; this is " + runtime.GOOS}
}

// Probe reports that nothing can be counted: perf_event_open is Linux-only.
func Probe() Availability {
	r := unavailableHere()
	env := Env{Paranoid: ParanoidUnknown}
	a := probeWith(runtime.GOOS, CPU{Vendor: runtime.GOARCH}, env, nil, func(Event) error { return errUnavailable })
	for i := range a.Events {
		a.Events[i].Reason = &r
	}
	a.Software = Status{Reason: &r}
	a.Hardware = Status{Reason: &r}
	a.Raw = Status{Reason: &r}
	a.ContextNote = ""
	return a
}

type unavailableError struct{}

func (unavailableError) Error() string { return "perf events are unavailable on " + runtime.GOOS }

var errUnavailable error = unavailableError{}

type noThread struct{}

func (noThread) read(dst []GroupReading) error {
	for i := range dst {
		dst[i] = GroupReading{}
	}
	return nil
}
func (noThread) close() {}

func openThread(groups []GroupSpec) (threadCounters, map[string]Reason) {
	return noThread{}, nil
}

func threadContextSwitches() (uint64, bool) { return 0, false }

// CycleCounter counts cycles; never available on this platform.
type CycleCounter struct{}

// OpenCycleCounter fails: there are no perf counters on this platform.
func OpenCycleCounter() (*CycleCounter, error) {
	return nil, errUnavailable
}

// Cycles is never reached (OpenCycleCounter fails).
func (c *CycleCounter) Cycles() (uint64, error) { return 0, errUnavailable }

// Close does nothing.
func (c *CycleCounter) Close() error { return nil }
