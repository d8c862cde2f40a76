//go:build !linux

package kernel

import "errors"

// pinThread is not supported on this platform.
func pinThread(cpu int) error {
	return errors.New("pinning threads to a CPU is only supported on Linux")
}

// ReservedCPU always returns -1: pinning is only supported on Linux.
func ReservedCPU() (cpu int, reason string) {
	return -1, "pinning threads to a CPU is only supported on Linux"
}
