//go:build !(linux || darwin)

package storage

import (
	"errors"
	"os"
)

const canMap = false

func mmapFile(*os.File, int64, int) ([]byte, error) {
	return nil, errors.New("mmap is not supported here")
}

func munmapFile([]byte) {}
