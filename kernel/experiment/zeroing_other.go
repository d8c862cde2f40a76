//go:build !linux

package experiment

import "errors"

func mmapSupported() (bool, string) {
	return false, "the mmap variant is implemented for Linux only"
}

func mmapBuffer(size int) ([]byte, func() error, error) {
	return nil, nil, errors.New("mmap variant: not supported on this OS")
}
