package latency

import "golang.org/x/sys/unix"

// platformCaches reads the cache sizes macOS reports through sysctl.
func platformCaches() ([]Cache, string) {
	v := make(map[string]int64, len(sysctlCacheNames))
	for _, name := range sysctlCacheNames {
		b, err := unix.SysctlRaw(name)
		if err != nil {
			continue // not on this Mac (Intel Macs have no hw.perflevel0)
		}
		if n, err := sysctlInt(b); err == nil {
			v[name] = n
		}
	}
	c := SysctlCaches(v)
	if len(c) == 0 {
		return nil, ""
	}
	return c, "sysctl"
}
