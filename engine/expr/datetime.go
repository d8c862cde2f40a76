package expr

import (
	"fmt"
	"strings"
	"time"
)

// ParseDate parses a DATE value, YYYY-MM-DD (surrounding spaces allowed),
// and returns days since 1970-01-01. DATE literals, casts from VARCHAR and
// comparisons of a DATE with a string all use it.
func ParseDate(s string) (int64, error) {
	t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid date %q: expected YYYY-MM-DD", s)
	}
	return floorDiv(t.Unix(), 86400), nil
}

// ParseTimestamp parses a TIMESTAMP value, YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]
// (also with T as the separator), as UTC and returns microseconds since
// the epoch.
func ParseTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04",
		"2006-01-02T15:04", "2006-01-02",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("invalid timestamp %q: expected YYYY-MM-DD HH:MM:SS", s)
}
