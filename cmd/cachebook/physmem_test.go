package main

import (
	"runtime/debug"
	"testing"
	"testing/fstest"
)

// TestMemoryOf reads the memory a process may use from fixture trees of
// cgroup v2 and v1 layouts: the lowest limit along the process's cgroup
// path, or MemTotal when that is lower or no limit is set.
func TestMemoryOf(t *testing.T) {
	const GiB = 1 << 30
	meminfo := "MemTotal:       25165824 kB\nMemFree:        1000 kB\n" // 24 GiB
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	v2mount := "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	v1mounts := "" +
		"35 30 0:30 /docker/abc /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory\n" +
		"36 30 0:31 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct\n"
	v1unlimited := "9223372036854771712\n"
	tests := []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"no cgroup files", fstest.MapFS{"proc/meminfo": file(meminfo)}, 24 * GiB},
		{"v2, limit on the cgroup", fstest.MapFS{
			"proc/meminfo":                                   file(meminfo),
			"proc/self/cgroup":                               file("0::/user.slice/app.scope\n"),
			"proc/self/mountinfo":                            file(v2mount),
			"sys/fs/cgroup/memory.max":                       file("max\n"),
			"sys/fs/cgroup/user.slice/memory.max":            file("max\n"),
			"sys/fs/cgroup/user.slice/app.scope/memory.max":  file("3221225472\n"),
			"sys/fs/cgroup/user.slice/app.scope/memory.high": file("max\n"),
		}, 3 * GiB},
		{"v2, limit on a parent only", fstest.MapFS{
			"proc/meminfo":                                  file(meminfo),
			"proc/self/cgroup":                              file("0::/user.slice/app.scope\n"),
			"proc/self/mountinfo":                           file(v2mount),
			"sys/fs/cgroup/user.slice/memory.max":           file("2147483648\n"),
			"sys/fs/cgroup/user.slice/app.scope/memory.max": file("max\n"),
		}, 2 * GiB},
		{"v2, the lowest along the path", fstest.MapFS{
			"proc/meminfo":                                  file(meminfo),
			"proc/self/cgroup":                              file("0::/a/b\n"),
			"proc/self/mountinfo":                           file(v2mount),
			"sys/fs/cgroup/a/memory.max":                    file("1073741824\n"),
			"sys/fs/cgroup/a/b/memory.max":                  file("4294967296\n"),
			"sys/fs/cgroup/user.slice/app.scope/memory.max": file("1\n"), // not this process's
		}, 1 * GiB},
		{"v2, container with a cgroup namespace", fstest.MapFS{
			"proc/meminfo":             file(meminfo),
			"proc/self/cgroup":         file("0::/\n"),
			"proc/self/mountinfo":      file(v2mount),
			"sys/fs/cgroup/memory.max": file("3221225472\n"),
		}, 3 * GiB},
		{"v2, limit above MemTotal", fstest.MapFS{
			"proc/meminfo":             file(meminfo),
			"proc/self/cgroup":         file("0::/\n"),
			"proc/self/mountinfo":      file(v2mount),
			"sys/fs/cgroup/memory.max": file("107374182400\n"),
		}, 24 * GiB},
		{"v1, docker without a cgroup namespace", fstest.MapFS{
			"proc/meminfo":        file(meminfo),
			"proc/self/cgroup":    file("12:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n0::/\n"),
			"proc/self/mountinfo": file(v1mounts),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("3221225472\n"),
			"sys/fs/cgroup/memory/memory.stat":           file("cache 0\nhierarchical_memory_limit 3221225472\n"),
		}, 3 * GiB},
		{"v1, limit on a parent seen through memory.stat", fstest.MapFS{
			"proc/meminfo":        file(meminfo),
			"proc/self/cgroup":    file("9:memory:/\n"),
			"proc/self/mountinfo": file("35 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file(v1unlimited),
			"sys/fs/cgroup/memory/memory.stat":           file("rss 1\nhierarchical_memory_limit 2147483648\nhierarchical_memsw_limit 9223372036854771712\n"),
		}, 2 * GiB},
		{"v1, limit on a parent directory", fstest.MapFS{
			"proc/meminfo":        file(meminfo),
			"proc/self/cgroup":    file("4:memory:/kubepods/pod1/c1\n"),
			"proc/self/mountinfo": file("35 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  file(v1unlimited),
			"sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes":         file(v1unlimited),
			"sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes":    file("3221225472\n"),
			"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": file(v1unlimited),
		}, 3 * GiB},
		{"v1, unlimited", fstest.MapFS{
			"proc/meminfo":        file(meminfo),
			"proc/self/cgroup":    file("9:memory:/\n"),
			"proc/self/mountinfo": file("35 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file(v1unlimited),
			"sys/fs/cgroup/memory/memory.stat":           file("hierarchical_memory_limit 9223372036854771712\n"),
		}, 24 * GiB},
		{"hybrid: v1 memory controller, v2 unified", fstest.MapFS{
			"proc/meminfo":        file(meminfo),
			"proc/self/cgroup":    file("9:memory:/app\n0::/app\n"),
			"proc/self/mountinfo": file("35 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n40 30 0:40 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"),
			"sys/fs/cgroup/memory/app/memory.limit_in_bytes": file("5368709120\n"),
			"sys/fs/cgroup/unified/app/memory.max":           file("max\n"),
		}, 5 * GiB},
		{"mount point with an escaped space", fstest.MapFS{
			"proc/meminfo":                 file(meminfo),
			"proc/self/cgroup":             file("0::/\n"),
			"proc/self/mountinfo":          file("30 25 0:26 / /cg\\040root rw - cgroup2 cgroup2 rw\n"),
			"cg root/memory.max":           file("1073741824\n"),
			"sys/fs/cgroup/memory.max":     file("1\n"), // not mounted: not read
			"sys/fs/cgroup/memory/ignored": file(""),
		}, 1 * GiB},
		{"no /proc/self: the usual v1 mount", fstest.MapFS{
			"proc/meminfo": file(meminfo),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("3221225472\n"),
		}, 3 * GiB},
		{"no /proc/self: the usual v2 mount", fstest.MapFS{
			"proc/meminfo":             file(meminfo),
			"sys/fs/cgroup/memory.max": file("3221225472\n"),
		}, 3 * GiB},
		{"nothing readable", fstest.MapFS{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := memoryOf(tc.fs); got != tc.want {
				t.Errorf("memoryOf = %d (%.2f GiB), want %d (%.2f GiB)", got, float64(got)/GiB, tc.want, float64(tc.want)/GiB)
			}
		})
	}
}

// TestDefaultsFollowCgroup: in a 3 GiB v1 cgroup of a 24 GiB machine the
// default cell cap is a quarter of 3 GiB and Go's soft limit three
// quarters.
func TestDefaultsFollowCgroup(t *testing.T) {
	root := fstest.MapFS{
		"proc/meminfo":        {Data: []byte("MemTotal: 25165824 kB\n")},
		"proc/self/cgroup":    {Data: []byte("9:memory:/\n")},
		"proc/self/mountinfo": {Data: []byte("35 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")},
		"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("3221225472\n")},
	}
	m := memoryOf(root)
	if got, want := cellMemoryOf(m), int64(768<<20); got != want {
		t.Errorf("default cell memory %d, want %d", got, want)
	}
	if got, want := softLimitOf(m), int64(2304<<20); got != want {
		t.Errorf("soft memory limit %d, want %d", got, want)
	}
}

// TestBoundTo: a statement's bound lowers the runtime's soft limit below
// the process's total, the engine's mappings still come off it, and
// lifting the bound gives the total back.
func TestBoundTo(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	m := &memoryLimit{total: 1 << 30}
	for _, step := range []struct {
		do   func()
		want int64
	}{
		{func() { m.boundTo(statementBound(10<<20, 64<<20, 100<<20)) }, 10<<20 + 64<<20 + 100<<20},
		{func() { m.arenaMapped(20 << 20) }, 10<<20 + 64<<20 + 80<<20},
		{func() { m.boundTo(statementBound(10<<20, 64<<20, 0)) }, 1<<30 - 20<<20},
		{func() { m.arenaMapped(-20 << 20) }, 1 << 30},
	} {
		step.do()
		if got := debug.SetMemoryLimit(-1); got != step.want {
			t.Errorf("soft limit %d, want %d", got, step.want)
		}
	}
}
