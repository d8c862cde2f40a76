//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing where the OS cannot tie a child's life to its
// parent's; cleanups still kill the child when the test ends normally.
func dieWithParent(cmd *exec.Cmd) {}
