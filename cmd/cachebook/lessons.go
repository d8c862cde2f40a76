package main

import (
	"context"
	"errors"
	"io"
)

func cmdLessons(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
