package latency

import (
	"fmt"

	"cachebook/engine/units"
	"cachebook/kernel/param"
)

// MaxWorkingSet is the largest working set the uint32 chain indices can
// address (2^32 words of 4 bytes).
const MaxWorkingSet = 16 << 30

// Params are the parameters of a latency sweep: the flags of
// `cachebook latency` and the parameters of a latency cell, on the server
// and in the browser.
func Params() []param.Param {
	return []param.Param{
		{Name: "min", Type: param.Bytes, Default: "4K", Unit: "bytes", Min: 2 * NodeBytes, Max: MaxWorkingSet,
			Help: "smallest working set"},
		{Name: "max", Type: param.Bytes, Default: "1G", Unit: "bytes", Min: 2 * NodeBytes, Max: MaxWorkingSet,
			Help: "largest working set (the one buffer allocated); a default larger than the per-cell memory limit is halved until it fits"},
		{Name: "ppo", Type: param.Int, Default: "4", Min: 1, Max: 64, Help: "sizes per octave (doubling)"},
		{Name: "reps", Type: param.Int, Default: "5", Min: 1, Max: 1000, Help: "timed samples per size (median reported)"},
		{Name: "sample", Type: param.Duration, Min: 1e5, Max: 10e9,
			Help: "duration of one sample (default 20ms; 100ms in WebAssembly, whose timers are coarse)"},
		{Name: "huge", Type: param.Bool, Default: "true", Help: "ask for 2 MiB transparent huge pages (Linux only)"},
		{Name: "disk", Type: param.Bool, Default: "false",
			Help: "extend the curve past DRAM to the disk: random 4 KiB reads of a temporary file, the page cache bypassed where the OS allows (server only)"},
		{Name: "disk_size", Type: param.Bytes, Unit: "bytes", Min: 1 << 20, Max: 64 << 30,
			Help: "size of the disk test's file (default twice max, from 64 MiB to 4 GiB); larger than max, so its point lies past DRAM"},
		{Name: "seed", Type: param.Int, Default: "0", Min: 0, Max: 1 << 53, Help: "random seed of the chain (0: a fixed default)"},
	}
}

// ConfigFrom builds a Config from parsed Params, fitting a default max to
// memoryLimit bytes (≤ 0: no limit). An explicit max over the limit is a
// *param.MemoryError, returned before anything is allocated.
func ConfigFrom(v param.Values, memoryLimit int64) (Config, error) {
	if v.Int("min") > v.Int("max") && v.IsSet("max") {
		return Config{}, fmt.Errorf("min %s is larger than max %s", units.FormatBytes(v.Int("min")), units.FormatBytes(v.Int("max")))
	}
	err := v.Fit(memoryLimit, "max", "latency max="+v.Text("max"), func(v param.Values) int64 {
		return Memory(v.Int("min"), v.Int("max"), int(v.Int("ppo")))
	})
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		MinBytes:        v.Int("min"),
		MaxBytes:        v.Int("max"),
		PointsPerOctave: int(v.Int("ppo")),
		Reps:            int(v.Int("reps")),
		SampleTime:      v.Duration("sample"),
		HugePages:       v.Bool("huge"),
		Seed:            uint64(v.Int("seed")),
	}
	if cfg.MinBytes > cfg.MaxBytes {
		cfg.MinBytes = cfg.MaxBytes // the default min and a fitted default max
	}
	if v.IsSet("disk_size") && !v.Bool("disk") {
		return Config{}, fmt.Errorf("disk_size=%s is given without disk=true", v.Text("disk_size"))
	}
	if v.Bool("disk") {
		if !storageSupported {
			return Config{}, fmt.Errorf("disk=true: %w: a browser page cannot read a file around its caches; run this cell on the server to see the disk", errNoStorage)
		}
		cfg.DiskBytes = StorageSize(cfg.MaxBytes)
		if v.IsSet("disk_size") {
			cfg.DiskBytes = v.Int("disk_size")
		}
		if cfg.DiskBytes <= cfg.MaxBytes {
			return Config{}, fmt.Errorf("disk_size=%s must be larger than max=%s, so that the disk's point lies past DRAM on the curve",
				FormatSize(cfg.DiskBytes), FormatSize(cfg.MaxBytes))
		}
	}
	return cfg, nil
}

// Memory is the bytes a sweep from minBytes to maxBytes allocates: its
// largest working set, rounded up to whole 2 MiB pages when huge pages are
// asked for.
func Memory(minBytes, maxBytes int64, perOctave int) int64 {
	s := Sizes(minBytes, maxBytes, perOctave)
	return (s[len(s)-1] + 2<<20 - 1) &^ (2<<20 - 1)
}
