//go:build unix

package spill

import (
	"errors"
	"syscall"
)

const supported = true

// alive reports whether a process with this id runs (or may: one that we
// are not allowed to signal is someone else's and alive).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
