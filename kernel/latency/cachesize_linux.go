package latency

import "os"

// platformCaches reads cpu0's caches from sysfs.
func platformCaches() ([]Cache, string) {
	c, err := ReadSysfsCaches(os.DirFS("/sys/devices/system/cpu/cpu0/cache"))
	if err != nil || len(c) == 0 {
		return nil, ""
	}
	return c, "sysfs"
}
