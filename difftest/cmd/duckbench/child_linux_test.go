package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child get SIGKILL when the test process ends, even
// by a timeout panic that runs no cleanups: an orphaned duckbench would go on
// running its query and load the machine for the tests that follow.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
