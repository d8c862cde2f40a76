package bandwidth

import (
	"runtime"
	"slices"
	"strings"

	"cachebook/kernel/param"
)

// Params are the parameters of a bandwidth run: the flags of
// `cachebook bandwidth` and the parameters of a bandwidth cell, on the
// server and in the browser.
func Params() []param.Param {
	ops := make([]string, len(AllOps))
	for i, o := range AllOps {
		ops[i] = string(o)
	}
	return []param.Param{
		{Name: "bytes", Type: param.Bytes, Default: "256M", Unit: "bytes", Min: 4096, Max: 1 << 40,
			Help: "buffer size per thread (copy needs two); a default larger than the per-cell memory limit allows is halved until it fits"},
		{Name: "threads", Type: param.Int, List: true, Min: 1, Max: 1024, Unit: "threads",
			Help: "thread counts to measure (default 1 and the number of CPUs)"},
		{Name: "ops", Type: param.String, List: true, Default: strings.Join(ops, ","), Choices: ops,
			Help: "operations to measure"},
		{Name: "reps", Type: param.Int, Default: "5", Min: 1, Max: 1000, Help: "timed repetitions (median reported)"},
	}
}

// ConfigFrom builds a Config from parsed Params. Runs are bounded by the
// explicit limits of the runtime: at most maxThreads threads (≤ 0: no
// limit) and memoryLimit bytes for all buffers together (≤ 0: no limit); a
// default size is halved until it fits, an explicit one over the limit is
// a *param.MemoryError. Nothing is allocated.
func ConfigFrom(v param.Values, memoryLimit int64, maxThreads int) (Config, error) {
	cfg := Config{Reps: int(v.Int("reps"))}
	for _, n := range v.Ints("threads") {
		cfg.Threads = append(cfg.Threads, int(n))
	}
	if len(cfg.Threads) == 0 {
		cfg.Threads = DefaultThreads()
	}
	if maxThreads > 0 {
		if m := slices.Max(cfg.Threads); m > maxThreads {
			if v.IsSet("threads") {
				return Config{}, &param.ThreadsError{Want: m, Have: maxThreads}
			}
			cfg.Threads = slices.DeleteFunc(cfg.Threads, func(n int) bool { return n > maxThreads })
		}
	}
	for _, s := range v.Strings("ops") {
		cfg.Ops = append(cfg.Ops, Op(s))
	}
	what := "bandwidth bytes=" + v.Text("bytes")
	if v.IsSet("threads") {
		what += " threads=" + v.Text("threads")
	}
	if v.IsSet("ops") {
		what += " ops=" + v.Text("ops")
	}
	err := v.Fit(memoryLimit, "bytes", what, func(v param.Values) int64 {
		c := cfg
		c.Bytes = v.Int("bytes")
		return Memory(c)
	})
	if err != nil {
		return Config{}, err
	}
	cfg.Bytes = v.Int("bytes")
	return cfg, nil
}

// DefaultThreads is 1 and the number of CPUs (just 1 on one CPU).
func DefaultThreads() []int {
	t := []int{1}
	if n := runtime.NumCPU(); n > 1 {
		t = append(t, n)
	}
	return t
}

// Memory is the bytes a run of cfg allocates: one buffer per thread of
// the largest thread count, two with copy.
func Memory(cfg Config) int64 {
	cfg = cfg.withDefaults()
	per := cfg.Bytes / 8 * 8
	if slices.Contains(cfg.Ops, Copy) {
		per *= 2
	}
	n := int64(slices.Max(cfg.Threads))
	if per > 0 && n > (1<<62)/per {
		return 1 << 62
	}
	return per * n
}
