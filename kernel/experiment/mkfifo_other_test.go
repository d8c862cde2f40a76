//go:build !unix

package experiment

import "errors"

func syscallMkfifo(string) error { return errors.New("no FIFOs on this platform") }
