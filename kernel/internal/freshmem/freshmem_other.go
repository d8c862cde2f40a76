//go:build !linux

package freshmem

import "errors"

// Supported reports that Map cannot map memory here, and why.
func Supported() (bool, string) {
	return false, "fresh anonymous mappings are implemented for Linux only"
}

// Map fails here (see freshmem_linux.go).
func Map(size int) ([]byte, func() error, error) {
	return nil, nil, errors.New("fresh anonymous mappings: not supported on this OS")
}
