package main

import (
	"context"
	"errors"
	"io"
)

func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
