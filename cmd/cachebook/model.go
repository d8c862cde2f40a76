package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"cachebook/kernel"
)

// countersFlag is --counters: bare (or on) for perf counters, model for
// modelled counters (engine/cachesim), both for both.
type countersFlag string

func (c *countersFlag) String() string { return string(*c) }

func (c *countersFlag) Set(v string) error {
	switch v {
	case "true", "on":
		*c = "on"
	case "false", "off":
		*c = ""
	case "model", "both":
		*c = countersFlag(v)
	default:
		return fmt.Errorf("want on, model or both, got %q", v)
	}
	return nil
}

// IsBoolFlag lets --counters stand alone (meaning on).
func (c *countersFlag) IsBoolFlag() bool { return true }

func (c countersFlag) pmu() bool   { return c == "on" || c == "both" }
func (c countersFlag) model() bool { return c == "model" || c == "both" }

// parseGeometry splits --geometry "l1=32K l3=32M sample=1/16" into the
// attributes kernel.NewModelRecorder takes.
func parseGeometry(s string) (map[string]string, error) {
	attrs := map[string]string{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--geometry: %q: want key=value", f)
		}
		attrs[k] = v
	}
	return attrs, nil
}

func writeModel(w io.Writer, rep *kernel.ModelReport, format string) error {
	if format == "json" {
		return json.NewEncoder(w).Encode(map[string]any{"model": rep})
	}
	_, err := io.WriteString(w, rep.Text())
	return err
}
