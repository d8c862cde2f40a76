package main

import (
	"context"
	"errors"
	"io"
)

func cmdQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
