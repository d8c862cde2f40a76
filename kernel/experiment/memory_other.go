//go:build !linux

package experiment

import "errors"

var errNoPinning = errors.New("pinning threads to CPUs is only implemented on Linux")

// pageBuffer returns size bytes from the Go heap: huge pages cannot be
// requested here, so advised is always false.
func pageBuffer(size int, huge bool) (buf []byte, advised bool, release func() error, err error) {
	return make([]byte, size), false, func() error { return nil }, nil
}

// allowedCPUs is not known here.
func allowedCPUs() ([]int, error) { return nil, errNoPinning }

// pinThread is not supported here.
func pinThread(cpu int) (restore func(), err error) { return nil, errNoPinning }

// cpuRelation is not known here.
func cpuRelation(a, b int) string { return "" }
