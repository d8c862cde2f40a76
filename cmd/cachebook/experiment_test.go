package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestParseExperimentArgs(t *testing.T) {
	tests := []struct {
		args    []string
		params  string
		format  string
		wantErr string
	}{
		{nil, "map[]", "table", ""},
		{[]string{"--threads", "4", "--format", "json"}, "map[threads:4]", "json", ""},
		{[]string{"--threads=4", "-size=8MiB"}, "map[size:8MiB threads:4]", "table", ""},
		{[]string{"--threads"}, "", "", "needs a value"},
		{[]string{"threads"}, "", "", "unexpected argument"},
		{[]string{"--format", "xml"}, "", "", "format must be table or json"},
		{[]string{"--a", "1", "--a", "2"}, "", "", "given twice"},
		{[]string{"--=3"}, "", "", "bad flag"},
	}
	for _, tt := range tests {
		params, format, err := parseExperimentArgs(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got := fmt.Sprint(params); got != tt.params || format != tt.format {
			t.Errorf("%q: %s %s, want %s %s", tt.args, got, format, tt.params, tt.format)
		}
	}
}

func TestCmdExperiment(t *testing.T) {
	ctx := context.Background()
	var out, errb bytes.Buffer
	if err := cmdExperiment(ctx, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"false-sharing", "lock-contention", "parallel-merge", "zeroing", "sum-rewrite", "--threads"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("listing lacks %q", name)
		}
	}
	out.Reset()
	args := []string{"false-sharing", "--threads", "2", "--iterations", "100", "--reps", "1", "--format", "json"}
	if err := cmdExperiment(ctx, args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Experiment string
		Params     map[string]string
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Experiment != "false-sharing" || res.Params["iterations"] != "100" {
		t.Errorf("json output %q: %v", out.String(), err)
	}
	err := cmdExperiment(ctx, []string{"false-sharing", "--threads", "0"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "threads must be between 1 and 256, got 0") {
		t.Errorf("bad threads: %v", err)
	}
	if err := cmdExperiment(ctx, []string{"nope"}, &out, &errb); err == nil {
		t.Error("unknown experiment accepted")
	}
}
