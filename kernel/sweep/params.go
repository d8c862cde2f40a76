package sweep

import (
	"slices"

	"cachebook/kernel/param"
)

// Strategies are the group_by settings a sweep may measure.
var strategies = []string{"naive", "radix", "parallel", "auto"}

// Params are the parameters of a sweep: the flags of `cachebook sweep`
// and the parameters of a sweep cell, on the server and in the browser.
func Params() []param.Param {
	return []param.Param{
		{Name: "rows", Type: param.Int, Default: "1e7", Min: 1, Max: 1 << 31, Unit: "rows",
			Help: "rows of the generated table; a default larger than the per-cell memory limit allows is halved until it fits"},
		{Name: "groups", Type: param.Int, List: true, Default: "1e3,1e4,1e5,1e6,1e7", Min: 1, Max: 1 << 31, Unit: "groups",
			Help: "distinct keys per point (default counts larger than rows are left out)"},
		{Name: "strategies", Type: param.String, List: true, Default: "naive,radix", Choices: strategies,
			Help: "GROUP BY strategies (SET group_by)"},
		{Name: "reps", Type: param.Int, Default: "3", Min: 1, Max: 100, Help: "timed runs per point after one warm-up (median reported)"},
		{Name: "seed", Type: param.Int, Default: "42", Min: 1, Max: 1 << 53, Help: "key generator seed"},
		{Name: "model", Type: param.Bool, Default: "false",
			Help: "also model each point's L1, L2, L3 misses and DRAM lines per row (engine/cachesim, 1/16 set sampling), labelled modelled; costs about a microsecond a row per point"},
	}
}

// ConfigFrom builds a Config from parsed Params, within memoryLimit bytes
// (≤ 0: no limit): a default row count is halved until the sweep fits, an
// explicit one over the limit is a *param.MemoryError. Nothing is
// allocated.
func ConfigFrom(v param.Values, memoryLimit int64) (Config, error) {
	groups := func(v param.Values) []int64 {
		g := v.Ints("groups")
		if !v.IsSet("groups") {
			rows := v.Int("rows")
			g = slices.DeleteFunc(slices.Clone(g), func(n int64) bool { return n > rows })
			if len(g) == 0 {
				g = []int64{rows}
			}
		}
		return g
	}
	what := "sweep rows=" + v.Text("rows")
	if v.IsSet("groups") {
		what += " groups=" + v.Text("groups")
	}
	err := v.Fit(memoryLimit, "rows", what, func(v param.Values) int64 {
		return Memory(v.Int("rows"), groups(v), v.Bool("model"))
	})
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		Rows:        v.Int("rows"),
		Groups:      groups(v),
		Strategies:  v.Strings("strategies"),
		Reps:        int(v.Int("reps")),
		Seed:        uint64(v.Int("seed")),
		QueryMemory: memoryLimit,
		Model:       v.Bool("model"),
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Memory estimates the peak bytes of a sweep over rows rows: the key slice
// and its Parquet encoding while the table is written, then the engine's
// column and the hash table of the largest group count while it is
// queried, with room for the garbage collector's slack (the resident
// set, not just the live heap). Measured in TestMemoryBound. With model,
// the keys are kept for the modelled pass (8 bytes a row) beside its
// replica of the hash table.
func Memory(rows int64, groups []int64, model bool) int64 {
	g := int64(0)
	if len(groups) > 0 {
		g = slices.Max(groups)
	}
	m := 80*rows + 64*g + 16<<20
	if model {
		m += 8*rows + 64*g
	}
	return m
}
