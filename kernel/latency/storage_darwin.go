package latency

import (
	"os"

	"golang.org/x/sys/unix"
)

const storageSupported = true

// openUncached opens name for reading with F_NOCACHE, so reads bypass the
// unified buffer cache.
func openUncached(name string) (*os.File, bool, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, false, "", err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_NOCACHE, 1); err != nil {
		return f, false, "F_NOCACHE refused (" + err.Error() + "): the figures may be the page cache's", nil
	}
	return f, true, "F_NOCACHE: reads bypass the buffer cache", nil
}

// dropCache has nothing to do: F_NOCACHE reads do not fill the cache.
func dropCache(*os.File) error { return nil }

// freeBytes is the space an unprivileged user may still write in dir.
func freeBytes(dir string) (int64, bool) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return 0, false
	}
	return int64(s.Bavail) * int64(s.Bsize), true
}
