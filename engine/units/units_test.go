package units

import "testing"

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1000000", 1000000, true},
		{"512MB", 512e6, true},
		{"512mb", 512e6, true},
		{"2GiB", 2 << 30, true},
		{"256M", 256 << 20, true},
		{"4k", 4096, true},
		{"1.5GiB", 3 << 29, true},
		{" 64 KiB ", 64 << 10, true},
		{"1T", 1 << 40, true},
		{"1TB", 1e12, true},
		{"10B", 10, true},
		{"1e30", 0, false},
		{"9EiB", 0, false},
		{"8589934592G", 0, false},
		{"-1MB", 0, false},
		{"0", 0, false},
		{"", 0, false},
		{"MB", 0, false},
		{"1.5B", 0, false},
		{"NaN", 0, false},
		{"inf", 0, false},
		{"12XB", 0, false},
	} {
		got, err := ParseBytes(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{256 << 20: "256MiB", 4096: "4KiB", 1000: "1000B", 3 << 30: "3GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseBytes(FormatBytes(n)); err != nil || back != n {
			t.Errorf("round trip %d: %d, %v", n, back, err)
		}
	}
	if got := HumanBytes(1536 << 20); got != "1.5GiB" {
		t.Errorf("HumanBytes = %q", got)
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"512MB", "2GiB", "1e30", "-3", "1.5k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && n <= 0 {
			t.Fatalf("ParseBytes(%q) = %d without error", s, n)
		}
	})
}
