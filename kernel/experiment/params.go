package experiment

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
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

func (p *params) fail(err error) {
	if p.first == nil {
		p.first = err
	}
}

// String returns the parameter's value.
func (p *params) String(name string) string { return p.effective[name] }

// Int parses an integer in [lo, hi]. Underscores are allowed as digit
// separators ("1_000_000").
func (p *params) Int(name string, lo, hi int) int {
	s := p.effective[name]
	v, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
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

// Bytes parses a size such as 8MiB, 64KiB, 1GiB, 4096 (plain bytes; K, M
// and G are accepted as binary units too) in [lo, hi].
func (p *params) Bytes(name string, lo, hi int64) int64 {
	s := p.effective[name]
	v, err := parseBytes(s)
	if err != nil {
		p.fail(fmt.Errorf("%s: %w", name, err))
		return 0
	}
	if v < lo || v > hi {
		p.fail(fmt.Errorf("%s must be between %s and %s, got %s", name, formatBytes(lo), formatBytes(hi), formatBytes(v)))
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

var errBadSize = errors.New("bad size")

func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
		{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(t, "_", ""), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%w %q (want e.g. 4096, 64KiB, 8MiB)", errBadSize, s)
	}
	return n * mult, nil
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
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
