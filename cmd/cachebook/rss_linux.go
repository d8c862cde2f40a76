package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// peakRSS returns the peak resident memory (VmHWM) of the running process
// pid (0: this one) in bytes, or 0 when unknown. A finished child's rusage
// is no use: Linux keeps the high-water mark across execve, so a child
// started from a large parent reports the parent's.
func peakRSS(pid int) int64 {
	path := "/proc/self/status"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			f := bytes.Fields(v)
			if len(f) == 2 && string(f[1]) == "kB" {
				n, err := strconv.ParseInt(string(f[0]), 10, 64)
				if err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
}
