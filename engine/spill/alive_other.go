//go:build !unix && !windows

package spill

// No file system to spill to (WebAssembly in a browser).
const supported = false

func alive(int) bool { return true }
