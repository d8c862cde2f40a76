//go:build !linux && !darwin && !js

package latency

import "os"

const storageSupported = true

// openUncached opens name plainly: this platform's way around the page
// cache (FILE_FLAG_NO_BUFFERING on Windows) is not used, and the output
// says so.
func openUncached(name string) (*os.File, bool, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, false, "", err
	}
	return f, false, "page cache not bypassed on this OS: the figures may be the page cache's", nil
}

func dropCache(*os.File) error { return nil }

func freeBytes(string) (int64, bool) { return 0, false }
