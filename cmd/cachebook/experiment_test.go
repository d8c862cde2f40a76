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
		args     []string
		params   string
		format   string
		counters bool
		wantErr  string
	}{
		{nil, "map[]", "table", false, ""},
		{[]string{"--threads", "4", "--format", "json"}, "map[threads:4]", "json", false, ""},
		{[]string{"--threads=4", "--counters", "-size=8MiB"}, "map[size:8MiB threads:4]", "table", true, ""},
		{[]string{"--threads"}, "", "", false, "needs a value"},
		{[]string{"threads"}, "", "", false, "unexpected argument"},
		{[]string{"--format", "xml"}, "", "", false, "format must be table or json"},
		{[]string{"--a", "1", "--a", "2"}, "", "", false, "given twice"},
		{[]string{"--=3"}, "", "", false, "bad flag"},
	}
	for _, tt := range tests {
		params, format, counters, err := parseExperimentArgs(tt.args)
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
		if got := fmt.Sprint(params); got != tt.params || format != tt.format || counters != tt.counters {
			t.Errorf("%q: %s %s %v, want %s %s %v", tt.args, got, format, counters, tt.params, tt.format, tt.counters)
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

func FuzzParseExperimentArgs(f *testing.F) {
	f.Add("--threads 4 --format json")
	f.Add("--threads=4 --counters -size=8MiB")
	f.Add("--a 1 --a 2")
	f.Add("-- x")
	f.Fuzz(func(t *testing.T, line string) {
		params, format, counters, err := parseExperimentArgs(strings.Fields(line))
		if err != nil {
			return
		}
		if format != "table" && format != "json" {
			t.Fatalf("format %q accepted", format)
		}
		// Written back as --name=value pairs, the parameters parse the same.
		var again []string
		for k, v := range params {
			again = append(again, "--"+k+"="+v)
		}
		if counters {
			again = append(again, "--counters")
		}
		p2, _, c2, err := parseExperimentArgs(again)
		if err != nil || fmt.Sprint(p2) != fmt.Sprint(params) || c2 != counters {
			t.Fatalf("%q: round trip gave %v, %v, %v; want %v", line, p2, c2, err, params)
		}
	})
}
