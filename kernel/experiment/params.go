package experiment

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"cachebook/engine/units"
	"cachebook/kernel/param"
)

// params resolves the raw parameter strings of one run against a Spec. Each
// getter records the first validation error and returns a zero value after
// it, so that a Run body can read all its parameters and check err once.
type params struct {
	effective map[string]string
	first     error
}

func newParams(spec Spec, raw map[string]string) (*params, error) {
	known := make(map[string]string, len(spec.Params))
	for _, p := range spec.Params {
		known[p.Name] = p.Default
	}
	var unknown []string
	for k := range raw {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, len(spec.Params))
		for i, p := range spec.Params {
			names[i] = p.Name
		}
		return nil, fmt.Errorf("%s: unknown parameter %s (have %s)", spec.Name,
			strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	eff := make(map[string]string, len(known))
	for k, def := range known {
		eff[k] = def
		if v, ok := raw[k]; ok {
			eff[k] = strings.TrimSpace(v)
		}
	}
	return &params{effective: eff}, nil
}

func (p *params) err() error { return p.first }

// describe renders the parameters the user gave, for error messages.
func (p *params) describe(raw map[string]string) string {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + raw[k]
	}
	return strings.Join(parts, " ")
}

func (p *params) fail(err error) {
	if p.first == nil {
		p.first = err
	}
}

// String returns the parameter's value.
func (p *params) String(name string) string { return p.effective[name] }

// Int parses an integer in [lo, hi] with param.ParseInt: 1000,
// 1_000_000 or 1e6.
func (p *params) Int(name string, lo, hi int) int {
	s := p.effective[name]
	v, err := param.ParseInt(s)
	if err != nil {
		p.fail(fmt.Errorf("%s must be an integer, got %q", name, s))
		return 0
	}
	if v < int64(lo) || v > int64(hi) {
		p.fail(fmt.Errorf("%s must be between %d and %d, got %d", name, lo, hi, v))
		return 0
	}
	return int(v)
}

// Float parses a number in [lo, hi].
func (p *params) Float(name string, lo, hi float64) float64 {
	s := p.effective[name]
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		p.fail(fmt.Errorf("%s must be a number, got %q", name, s))
		return 0
	}
	if v < lo || v > hi {
		p.fail(fmt.Errorf("%s must be between %g and %g, got %g", name, lo, hi, v))
		return 0
	}
	return v
}

// Bytes parses a size in [lo, hi] with units.ParseBytes: 8MiB, 64KiB,
// 1GiB, 4096 (plain bytes), 8M (binary), 8MB (decimal).
func (p *params) Bytes(name string, lo, hi int64) int64 {
	s := p.effective[name]
	v, err := units.ParseBytes(s)
	if err != nil {
		p.fail(fmt.Errorf("%s: %w", name, err))
		return 0
	}
	if v < lo || v > hi {
		p.fail(fmt.Errorf("%s must be between %s and %s, got %s", name, units.FormatBytes(lo), units.FormatBytes(hi), units.FormatBytes(v)))
		return 0
	}
	return v
}

// Duration parses a Go duration such as 100ms or 2s in [lo, hi].
func (p *params) Duration(name string, lo, hi time.Duration) time.Duration {
	s := p.effective[name]
	d, err := time.ParseDuration(s)
	if err != nil {
		p.fail(fmt.Errorf("%s must be a duration such as 100ms, got %q", name, s))
		return 0
	}
	if d < lo || d > hi {
		p.fail(fmt.Errorf("%s must be between %s and %s, got %s", name, lo, hi, d))
		return 0
	}
	return d
}

// Formatting helpers shared by the table renderers.

func fmtRate(opsPerSec float64) string {
	switch {
	case opsPerSec >= 1e9:
		return fmt.Sprintf("%.2f G/s", opsPerSec/1e9)
	case opsPerSec >= 1e6:
		return fmt.Sprintf("%.1f M/s", opsPerSec/1e6)
	case opsPerSec >= 1e3:
		return fmt.Sprintf("%.1f k/s", opsPerSec/1e3)
	}
	return fmt.Sprintf("%.0f /s", opsPerSec)
}

func fmtRatio(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

func fmtMs(ns int64) string {
	return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
}

// splitList yields the non-empty, trimmed elements of a comma-separated list.
func splitList(s string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for f := range strings.SplitSeq(s, ",") {
			if f = strings.TrimSpace(f); f != "" && !yield(f) {
				return
			}
		}
	}
}
