// Package units parses and formats byte sizes, the one definition shared by
// SQL settings, measurement cells, experiments and command-line flags.
//
// The suffixes follow GNU coreutils (and DuckDB for the two-letter forms):
//
//	K, M, G, T         powers of 1024 (as in "max=256M" or dd's bs=1M)
//	KiB, MiB, GiB, TiB powers of 1024
//	KB, MB, GB, TB     powers of 1000
//	B or no suffix     bytes
//
// Suffixes are case-insensitive; a number may have a fraction ("1.5GiB")
// but the result must be a whole, positive number of bytes that fits in an
// int64. Overflow is an error, never a wrap to a negative size.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var suffixes = []struct {
	name string
	mult float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseBytes parses a size such as "512MB", "2GiB", "256M" or "1000000".
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range suffixes {
		if strings.HasSuffix(t, u.name) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.name)), u.mult
			break
		}
	}
	if t == "" || strings.ContainsAny(t, "+-") && !strings.HasPrefix(t, "+") {
		return 0, fmt.Errorf("want a size such as 512MB, 2GiB or 256M, got %q", s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a size such as 512MB, 2GiB or 256M, got %q", s)
	}
	v := f * mult
	if v <= 0 {
		return 0, fmt.Errorf("size %q must be positive", s)
	}
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large (at most 8 EiB)", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// FormatBytes writes n with a binary suffix when it is a whole multiple of
// one (256MiB, 4KiB), else as plain bytes.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// HumanBytes writes n rounded to three significant digits with a binary
// suffix (1.50GiB, 912KiB), for display only.
func HumanBytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"} {
		if math.Abs(f) < 1024 || u == "PiB" {
			if u == "B" {
				return strconv.FormatInt(n, 10) + "B"
			}
			return strconv.FormatFloat(f, 'g', 3, 64) + u
		}
		f /= 1024
	}
	return strconv.FormatInt(n, 10) + "B"
}
