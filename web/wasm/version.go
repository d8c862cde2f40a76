package main

import "runtime"

// goVersion is the toolchain that built this binary; the worker shows it
// because wasm_exec.js must come from the same release.
func goVersion() string { return runtime.Version() }
