package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestServeClassFlags: a class needs the teacher's token, and the class
// flags are checked before anything starts.
func TestServeClassFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--class", "os", "--no-token"}, "--class needs a token"},
		{[]string{"--class", "os", "--learner-cell-memory", "lots"}, "--learner-cell-memory"},
	} {
		err := cmdServe(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error about %s", tc.args, err, tc.want)
		}
	}
}
