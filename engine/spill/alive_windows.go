package spill

import "os"

const supported = true

// alive reports whether a process with this id runs: FindProcess opens a
// handle to it on Windows, which fails for one that has exited.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
