package latency

import (
	"encoding/binary"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestSysctlCaches(t *testing.T) {
	const perf = "the performance cores' (hw.perflevel0)"
	tests := []struct {
		name string
		v    map[string]int64
		want []Cache
	}{
		{
			// sysctl hw on an M1: the plain hw.* sizes are the efficiency cores'.
			name: "Apple M1",
			v: map[string]int64{
				"hw.nperflevels": 2, "hw.cachelinesize": 128,
				"hw.perflevel0.l1icachesize": 192 << 10, "hw.perflevel0.l1dcachesize": 128 << 10,
				"hw.perflevel0.l2cachesize": 12 << 20, "hw.perflevel0.cpusperl2": 4,
				"hw.l1icachesize": 128 << 10, "hw.l1dcachesize": 64 << 10, "hw.l2cachesize": 4 << 20,
			},
			want: []Cache{
				{Level: 1, Type: "Data", SizeBytes: 128 << 10, Note: perf + "; 128-byte lines"},
				{Level: 1, Type: "Instruction", SizeBytes: 192 << 10, Note: perf},
				{Level: 2, Type: "Unified", SizeBytes: 12 << 20, Note: perf + "; shared by 4 CPUs"},
			},
		},
		{
			name: "Intel Mac without perflevels",
			v: map[string]int64{
				"hw.cachelinesize": 64, "hw.l1icachesize": 32 << 10, "hw.l1dcachesize": 32 << 10,
				"hw.l2cachesize": 256 << 10, "hw.l3cachesize": 8 << 20,
			},
			want: []Cache{
				{Level: 1, Type: "Data", SizeBytes: 32 << 10, Note: "64-byte lines"},
				{Level: 1, Type: "Instruction", SizeBytes: 32 << 10},
				{Level: 2, Type: "Unified", SizeBytes: 256 << 10},
				{Level: 3, Type: "Unified", SizeBytes: 8 << 20},
			},
		},
		{
			// One perf level (no efficiency cores): no "performance cores" note;
			// the L2 missing from perflevel0 falls back to hw, without its sharing.
			name: "each level falls back on its own",
			v: map[string]int64{
				"hw.nperflevels": 1, "hw.perflevel0.l1dcachesize": 64 << 10, "hw.perflevel0.cpusperl2": 8,
				"hw.l1dcachesize": 32 << 10, "hw.l2cachesize": 4 << 20,
			},
			want: []Cache{
				{Level: 1, Type: "Data", SizeBytes: 64 << 10},
				{Level: 2, Type: "Unified", SizeBytes: 4 << 20},
			},
		},
		{
			name: "zero and negative sizes are not caches",
			v:    map[string]int64{"hw.perflevel0.l1dcachesize": 0, "hw.l1dcachesize": 0, "hw.l2cachesize": -1, "hw.cachelinesize": 64},
		},
		{name: "nothing reported", v: map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SysctlCaches(tt.v); !slices.Equal(got, tt.want) {
				t.Errorf("SysctlCaches =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestSysctlInt(t *testing.T) {
	tests := []struct {
		b       []byte
		want    int64
		wantErr bool
	}{
		{b: []byte{0, 0, 2, 0}, want: 128 << 10},               // CTLTYPE_INT
		{b: []byte{0, 0, 0xc0, 0, 0, 0, 0, 0}, want: 12 << 20}, // CTLTYPE_QUAD
		{b: []byte{0, 0, 0, 0, 1, 0, 0, 0}, want: 1 << 32},     // the high word counts
		{b: []byte{0xff, 0xff, 0xff, 0xff}, want: -1},          // an int is signed
		{b: []byte{0x80, 0}, wantErr: true},                    // a short
		{b: nil, wantErr: true},                                // no value
		{b: []byte("Performance\x00"), wantErr: true},          // a string
	}
	for _, tt := range tests {
		got, err := sysctlInt(tt.b)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("sysctlInt(%v) = %d, %v; want %d, error %v", tt.b, got, err, tt.want, tt.wantErr)
		}
	}
}

// winCache is one CACHE_RELATIONSHIP as a test writes it.
type winCache struct {
	level      byte
	line       uint16
	size, typ  uint32
	groupCount uint16 // as written: 0 is what Windows 10 and earlier write
	masks      []winMask
	pad        int // bytes past the last mask that Size still covers
}

type winMask struct {
	mask  uint64
	group uint16
}

// record writes c as a SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX for a
// writer with pointers of ptrSize bytes, per the layout in cachesize_winparse.go.
func (c winCache) record(ptrSize int) []byte {
	le := binary.LittleEndian
	aff := ptrSize + 8
	b := make([]byte, slpiHeaderBytes+cacheRelBytes+max(len(c.masks), 1)*aff+c.pad)
	le.PutUint32(b[0:], relationCache)
	le.PutUint32(b[4:], uint32(len(b)))
	r := b[slpiHeaderBytes:]
	r[0], r[1] = c.level, 8 // Level, Associativity
	le.PutUint16(r[2:], c.line)
	le.PutUint32(r[4:], c.size)
	le.PutUint32(r[8:], c.typ)
	le.PutUint16(r[30:], c.groupCount)
	for i, m := range c.masks {
		a := r[cacheRelBytes+i*aff:]
		if ptrSize == 8 {
			le.PutUint64(a, m.mask)
		} else {
			le.PutUint32(a, uint32(m.mask))
		}
		le.PutUint16(a[ptrSize:], m.group)
	}
	return b
}

// otherRecord is a record of another relationship (e.g. RelationProcessorCore, 0).
func otherRecord(rel uint32, size int) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint32(b, rel)
	binary.LittleEndian.PutUint32(b[4:], uint32(size))
	for i := 8; i < size; i++ {
		b[i] = 0xa5
	}
	return b
}

func winBuffer(ptrSize int, recs ...any) []byte {
	var b []byte
	for _, r := range recs {
		switch r := r.(type) {
		case winCache:
			b = append(b, r.record(ptrSize)...)
		case []byte:
			b = append(b, r...)
		}
	}
	return b
}

const (
	cacheUnified, cacheInstruction, cacheData, cacheTrace = 0, 1, 2, 3
)

// desktop is a 16-thread desktop's RelationCache answer: per-core L1 and
// L2 shared by two SMT threads, one L3 for all.
func desktop(ptrSize int, groupCount uint16) []byte {
	g0 := func(m uint64) []winMask { return []winMask{{mask: m}} }
	return winBuffer(ptrSize,
		otherRecord(0, 48), // RelationProcessorCore, which RelationAll would include
		winCache{level: 1, line: 64, size: 48 << 10, typ: cacheData, groupCount: groupCount, masks: g0(0x3)},
		winCache{level: 1, line: 64, size: 32 << 10, typ: cacheInstruction, groupCount: groupCount, masks: g0(0x3)},
		winCache{level: 2, line: 64, size: 1280 << 10, typ: cacheUnified, groupCount: groupCount, masks: g0(0x3)},
		winCache{level: 1, line: 64, size: 48 << 10, typ: cacheData, groupCount: groupCount, masks: g0(0xc)}, // cores 2-3
		winCache{level: 3, line: 64, size: 30 << 20, typ: cacheUnified, groupCount: groupCount, masks: g0(0xffff), pad: 24},
	)
}

func TestParseProcessorCaches(t *testing.T) {
	desktopWant := []Cache{
		{Level: 1, Type: "Data", SizeBytes: 48 << 10, SharedCPUs: "0-1", Note: "64-byte lines"},
		{Level: 1, Type: "Instruction", SizeBytes: 32 << 10, SharedCPUs: "0-1"},
		{Level: 2, Type: "Unified", SizeBytes: 1280 << 10, SharedCPUs: "0-1"},
		{Level: 3, Type: "Unified", SizeBytes: 30 << 20, SharedCPUs: "0-15"},
	}
	tests := []struct {
		name    string
		buf     []byte
		ptrSize int
		want    []Cache
		wantErr string
	}{
		{name: "desktop, Windows 11", buf: desktop(8, 1), ptrSize: 8, want: desktopWant},
		{name: "desktop, Windows 10 writes GroupCount 0", buf: desktop(8, 0), ptrSize: 8, want: desktopWant},
		{name: "desktop, 32-bit masks", buf: desktop(4, 1), ptrSize: 4, want: desktopWant},
		{
			name: "two processor groups",
			buf: winBuffer(8,
				winCache{level: 1, size: 32 << 10, typ: cacheData, groupCount: 1, masks: []winMask{{mask: 1, group: 1}}}, // group 1's cpu 0
				winCache{level: 2, size: 2 << 20, typ: cacheUnified, groupCount: 1, masks: []winMask{{mask: 0x1}}},
				winCache{level: 3, size: 64 << 20, typ: cacheUnified, groupCount: 2, masks: []winMask{{mask: ^uint64(0)}, {mask: 0xff, group: 1}}},
			),
			ptrSize: 8,
			want: []Cache{
				{Level: 2, Type: "Unified", SizeBytes: 2 << 20, SharedCPUs: "0"},
				{Level: 3, Type: "Unified", SizeBytes: 64 << 20}, // spans groups: no sysfs-style list
			},
		},
		{
			name: "trace, unknown and empty caches",
			buf: winBuffer(8,
				winCache{level: 1, size: 12 << 10, typ: cacheTrace, groupCount: 1, masks: []winMask{{mask: 1}}},
				winCache{level: 4, size: 128 << 20, typ: 9, groupCount: 1, masks: []winMask{{mask: 1}}},
				winCache{level: 2, size: 0, typ: cacheUnified, groupCount: 1, masks: []winMask{{mask: 1}}},
			),
			ptrSize: 8,
			want: []Cache{
				{Level: 1, Type: "Trace", SizeBytes: 12 << 10, SharedCPUs: "0"},
				{Level: 4, Type: "Unknown", SizeBytes: 128 << 20, SharedCPUs: "0"},
			},
		},
		{name: "empty buffer", buf: nil, ptrSize: 8},
		{name: "only other relationships", buf: winBuffer(8, otherRecord(0, 48), otherRecord(3, 80)), ptrSize: 8},
		{name: "pointer size", buf: desktop(8, 1), ptrSize: 6, wantErr: "pointer size 6"},
		{name: "truncated header", buf: append(desktop(8, 1), 2, 0, 0, 0, 64), ptrSize: 8, wantErr: "a header needs 8"},
		{name: "size zero would loop", buf: make([]byte, 8), ptrSize: 8, wantErr: "size 0 outside"},
		{name: "size below the header", buf: winBuffer(8, []byte{0, 0, 0, 0, 4, 0, 0, 0}), ptrSize: 8, wantErr: "size 4 outside"},
		{name: "size past the buffer", buf: desktop(8, 1)[:100], ptrSize: 8, wantErr: "outside"},
		{name: "cache record too short", buf: otherRecord(relationCache, 8+20), ptrSize: 8, wantErr: "want at least 32"},
		{
			name:    "more group masks than bytes",
			buf:     winCache{level: 3, size: 1 << 20, groupCount: 3, masks: []winMask{{mask: 1}}}.record(8),
			ptrSize: 8, wantErr: "3 group masks need 80",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcessorCaches(tt.buf, tt.ptrSize)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParseProcessorCaches =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestCPUList(t *testing.T) {
	tests := []struct {
		cpus []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1}, "0-1"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{[]int{0, 2, 4}, "0,2,4"},
	}
	for _, tt := range tests {
		if got := cpuList(tt.cpus); got != tt.want {
			t.Errorf("cpuList(%v) = %q, want %q", tt.cpus, got, tt.want)
		}
	}
}

func FuzzParseProcessorCaches(f *testing.F) {
	f.Add(desktop(8, 1), true)
	f.Add(desktop(4, 0), false)
	f.Fuzz(func(t *testing.T, buf []byte, wide bool) {
		ptrSize := 4
		if wide {
			ptrSize = 8
		}
		got, err := ParseProcessorCaches(buf, ptrSize)
		if err != nil {
			return
		}
		for _, c := range got {
			if c.SizeBytes <= 0 || (c.SharedCPUs != "" && !strings.HasPrefix(c.SharedCPUs, "0")) {
				t.Errorf("cache %+v", c)
			}
		}
	})
}

// TestOSCachesPrefersPlatform checks that, on Linux, what sysfs reports is
// what OSCaches returns, ahead of CPUID.
func TestOSCachesPrefersPlatform(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sysfs is Linux's")
	}
	want, err := ReadSysfsCaches(os.DirFS("/sys/devices/system/cpu/cpu0/cache"))
	if err != nil || len(want) == 0 {
		t.Skipf("no sysfs cache directory here (%v)", err)
	}
	got, src := OSCaches()
	if src != "sysfs" || !slices.Equal(got, want) {
		t.Errorf("OSCaches = %+v, %q; want sysfs's %+v", got, src, want)
	}
}
