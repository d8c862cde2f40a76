package main

import (
	"fmt"
	"strconv"
	"strings"
)

// params parses a measurement cell's parameters, as the server's kernel
// does: its attributes plus key=value words of its source (blank lines and
// # comments skipped). Keys not in allowed are an error.
func params(attrs map[string]string, src string, allowed ...string) (map[string]string, error) {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	p := map[string]string{}
	for k, v := range attrs {
		switch k {
		case "timeout", "counters", "id":
			continue
		}
		p[k] = v
	}
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, f := range strings.Fields(line) {
			k, v, found := strings.Cut(f, "=")
			if !found || k == "" {
				return nil, fmt.Errorf("parameter %q: want key=value", f)
			}
			p[k] = v
		}
	}
	for k := range p {
		if !ok[k] {
			return nil, fmt.Errorf("unknown parameter %q (this cell takes: %s)", k, strings.Join(allowed, ", "))
		}
	}
	return p, nil
}

// boundedInt parses an integer in [lo, hi].
func boundedInt(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is outside %d..%d", n, lo, hi)
	}
	return n, nil
}
