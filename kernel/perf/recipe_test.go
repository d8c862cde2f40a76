package perf

import "testing"

func TestChooseRecipe(t *testing.T) {
	tests := []struct {
		cpu  CPU
		want string
	}{
		{CPU{Vendor: "AuthenticAMD", Family: 25, Model: 0x01}, "amd-zen3"}, // Milan
		{CPU{Vendor: "AuthenticAMD", Family: 25, Model: 0x0F}, "amd-zen3"}, // edge of first range
		{CPU{Vendor: "AuthenticAMD", Family: 25, Model: 0x21}, "amd-zen3"}, // Vermeer
		{CPU{Vendor: "AuthenticAMD", Family: 25, Model: 0x5F}, "amd-zen3"}, // edge of second range
		{CPU{Vendor: "AuthenticAMD", Family: 25, Model: 0x11}, "amd-zen4"}, // Genoa
		{CPU{Vendor: "AuthenticAMD", Family: 25, Model: 0x61}, "amd-zen4"}, // Raphael
		{CPU{Vendor: "AuthenticAMD", Family: 25, Model: 0xA0}, "amd-zen4"}, // Bergamo
		{CPU{Vendor: "AuthenticAMD", Family: 26, Model: 0x02}, "amd-zen5"}, // Turin (the test VM)
		{CPU{Vendor: "AuthenticAMD", Family: 23, Model: 0x31}, "generic"},  // Zen 2
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x55}, "intel-skylake"},
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x9E}, "intel-skylake"},
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x6A}, "intel-icelake"},
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x8C}, "intel-icelake"},
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x8F}, "intel-spr"},
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0xAD}, "intel-spr"},
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x97}, "intel-hybrid"},
		{CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x3F}, "generic"}, // Haswell-EP
		{CPU{Vendor: "GenuineIntel", Family: 19, Model: 0x01}, "generic"},
		{CPU{Vendor: "arm64"}, "generic"},
		{CPU{}, "generic"},
	}
	for _, tt := range tests {
		if got := ChooseRecipe(tt.cpu).Name; got != tt.want {
			t.Errorf("ChooseRecipe(%v) = %s, want %s", tt.cpu, got, tt.want)
		}
	}
}

func TestRecipeGroupsFitCounters(t *testing.T) {
	// Zen 4 has 6 general-purpose counters; keep groups at 6 or fewer events
	// so they can be scheduled at all (Intel top-down uses fixed counters).
	for _, c := range []CPU{
		{Vendor: "AuthenticAMD", Family: 25, Model: 0x11},
		{Vendor: "AuthenticAMD", Family: 26, Model: 0x02},
		{Vendor: "GenuineIntel", Family: 6, Model: 0x55},
		{Vendor: "GenuineIntel", Family: 6, Model: 0x8F},
	} {
		r := ChooseRecipe(c)
		if len(r.Groups) == 0 {
			t.Errorf("%s: no groups", r.Name)
		}
		for _, g := range r.Groups {
			if len(g.Events) == 0 || len(g.Events) > 6 {
				t.Errorf("%s/%s: %d events", r.Name, g.Name, len(g.Events))
			}
		}
	}
}

func TestRawEncodings(t *testing.T) {
	tests := []struct {
		name string
		got  uint64
		want uint64
	}{
		// Cross-checks against values the Linux kernel uses for Zen 4.
		{"amd ref-cycles 0x120/1", amdRaw(0x120, 0x01), 0x100000120},
		{"amd cycles 0x76", amdRaw(0x76, 0), 0x76},
		{"amd cache-misses 0x64/9", amdRaw(0x64, 0x09), 0x964},
		{"amd backend_stalls", amdRaw(0x1a0, 0x1e), 0x100001ea0},
		{"amd load_not_complete", amdRaw(0xd6, 0xa2), 0xa2d6},
		{"amd fills dram near+far", amdRaw(0x43, 0x48), 0x4843},
		{"intel stalls_mem_any", intelRaw(0xa3, 0x14, 0x14), 0x140014a3},
		{"intel l3_miss", intelRaw(0xd1, 0x20, 0), 0x20d1},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
}
