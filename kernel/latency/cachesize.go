package latency

import (
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/cpuid/v2"

	"cachebook/engine/units"
)

// Cache is one cache as the operating system or CPUID describes it.
type Cache struct {
	Level     int    `json:"level"`
	Type      string `json:"type"` // Data, Instruction, Unified
	SizeBytes int64  `json:"size_bytes"`
	// SharedCPUs is sysfs shared_cpu_list ("0-7"); empty from CPUID.
	SharedCPUs string `json:"shared_cpus,omitempty"`
	Note       string `json:"note,omitempty"`
}

// OSCaches returns what the operating system says the caches of the first
// CPU are, falling back to CPUID (x86 only). The source says where they came
// from: "sysfs" (Linux, /sys/devices/system/cpu/cpu0/cache), "sysctl"
// (macOS: the performance cores' hw.perflevel0.*, else hw.*), "windows"
// (GetLogicalProcessorInformationEx), "cpuid", or "none" (e.g. in a
// browser, where nothing tells).
func OSCaches() ([]Cache, string) {
	if c, src := platformCaches(); len(c) > 0 {
		return c, src
	}
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		return nil, "none"
	}
	if c := cpuidCaches(cpuid.CPU.Cache.L1D, cpuid.CPU.Cache.L2, cpuid.CPU.Cache.L3); len(c) > 0 {
		return c, "cpuid"
	}
	return nil, "none"
}

func cpuidCaches(l1d, l2, l3 int) []Cache {
	var out []Cache
	add := func(level int, typ string, size int, note string) {
		if size > 0 {
			out = append(out, Cache{Level: level, Type: typ, SizeBytes: int64(size), Note: note})
		}
	}
	add(1, "Data", l1d, "")
	add(2, "Unified", l2, "")
	add(3, "Unified", l3, "CPUID may report the whole socket's L3, not the slice one core can use")
	return out
}

// ReadSysfsCaches reads index*/{level,type,size,shared_cpu_list} from fsys,
// a view of a cpuN/cache directory.
func ReadSysfsCaches(fsys fs.FS) ([]Cache, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read cache dir: %w", err)
	}
	var out []Cache
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		read := func(name string) string {
			b, err := fs.ReadFile(fsys, path.Join(e.Name(), name))
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		level, err := strconv.Atoi(read("level"))
		if err != nil {
			continue
		}
		size, err := units.ParseBytes(read("size"))
		if err != nil {
			continue
		}
		out = append(out, Cache{Level: level, Type: read("type"), SizeBytes: size, SharedCPUs: read("shared_cpu_list")})
	}
	sortCaches(out)
	return out, nil
}

// sortCaches orders caches by level, then type.
func sortCaches(c []Cache) {
	sort.Slice(c, func(i, j int) bool {
		if c[i].Level != c[j].Level {
			return c[i].Level < c[j].Level
		}
		return c[i].Type < c[j].Type
	})
}

// FormatSize prints a byte count with a binary unit: "48 KiB", "1.5 MiB".
func FormatSize(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(b)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}
