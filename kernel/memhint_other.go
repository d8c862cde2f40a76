//go:build !js

package kernel

// memoryHint adds nothing outside the browser: the engine's error already
// names SET memory_limit, which works here.
func memoryHint(Limits) string { return "" }
