// Package kind names the cell kinds, once, for the notebook format and the
// kernel that runs the cells. It imports nothing, so the WebAssembly kernel
// can use it without the notebook parser and its Markdown library.
package kind

// The kinds of code cell: a fenced block's info string starts with one.
const (
	SQL        = "sql"        // SQL statements run on the engine
	Latency    = "latency"    // the memory latency curve of this machine
	Bandwidth  = "bandwidth"  // memory bandwidth, one core vs all
	Sweep      = "sweep"      // GROUP BY cost as the number of groups grows
	Experiment = "experiment" // a named experiment (false-sharing, zeroing, ...)
	Cachesim   = "cachesim"   // a named access pattern through the cache model
)

// Markdown is the kind of a prose cell.
const Markdown = "markdown"

// Code returns the code cell kinds in the order the documentation lists them.
func Code() []string {
	return []string{SQL, Latency, Bandwidth, Sweep, Experiment, Cachesim}
}
