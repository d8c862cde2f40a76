// Package sizing sizes the lessons' key comparisons from this machine's
// caches: it plans a generated table of integer keys whose naive GROUP BY
// hash table is several times the last-level cache (or as close to that as
// the memory and time budgets allow), generates it, and says in words what
// sizes it used.
//
// The table is registered with the engine as keys(k BIGINT, s BIGINT): Rows
// keys k in shuffled order, with exactly Groups distinct values, each
// occurring about Rows/Groups times, and beside each a small key s with
// SmallGroups distinct values, whose hash table fits in any L1 or L2: the
// same rows, the same order, a table that fits against one that does not.
package sizing

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"

	"github.com/parquet-go/parquet-go"

	"cachebook/engine"
	"cachebook/kernel/latency"
)

// Table is the name the keys table is registered under.
const Table = "keys"

// SlotBytes is the size of one slot of the engine's naive integer-key
// count table (engine/agg: a key and a count, 8 bytes each).
const SlotBytes = 16

// RowsPerGroup is how often each key occurs. Radix partitioning pays for
// its extra pass only when keys repeat (Pivot's table has about 5.7 rows
// per group; at one row per group radix loses).
const RowsPerGroup = 8

// SmallGroups is the number of distinct values of column s.
const SmallGroups = 1000

// TargetFactor is how many times the L3 the naive table should be.
const TargetFactor = 4

// AssumedL3 is the L3 assumed where nothing reports one (the browser).
const AssumedL3 = 32 << 20

// Budget bounds a plan.
type Budget struct {
	// Memory is the most the table and one GROUP BY over it may use.
	Memory int64
	// MaxRows bounds the rows, so that generation takes seconds.
	MaxRows int64
}

// ServerBudget is the budget of the server, cachebook run and the tests:
// up to 16 M rows and a quarter of the cell memory cap (at most 1 GiB).
func ServerBudget(cellMemory int64) Budget {
	m := int64(1 << 30)
	if cellMemory > 0 {
		m = min(m, cellMemory/4)
	}
	return Budget{Memory: m, MaxRows: 16_000_000}
}

// BrowserBudget is the WebAssembly build's: one thread and a small heap
// (wasm32), so 8 M rows at most and half the cell memory (256 MiB of the
// browser's 512 MiB cap).
func BrowserBudget(cellMemory int64) Budget {
	m := int64(256 << 20)
	if cellMemory > 0 {
		m = min(m, cellMemory/2)
	}
	return Budget{Memory: m, MaxRows: 8_000_000}
}

// Plan is a sized keys table.
type Plan struct {
	Rows   int64 `json:"rows"`
	Groups int64 `json:"groups"`
	// TableBytes is the naive hash table's size at Groups.
	TableBytes int64 `json:"table_bytes"`
	// L3Bytes is the last-level cache the plan was sized against, and
	// L3Source where that figure came from ("sysfs", "cpuid", "assumed").
	L3Bytes  int64  `json:"l3_bytes"`
	L3Source string `json:"l3_source"`
	// OSL3Bytes and OSL3Source are what the operating system reports,
	// kept beside a measured L3Bytes so that the output can name both.
	OSL3Bytes  int64  `json:"os_l3_bytes,omitempty"`
	OSL3Source string `json:"os_l3_source,omitempty"`
	// Capped says the budget stopped the table short of TargetFactor × L3.
	Capped bool   `json:"capped"`
	Budget Budget `json:"budget"`
}

// L3 returns the largest level-3 (or, without one, the largest) data or
// unified cache of caches, or AssumedL3 when there is none.
func L3(caches []latency.Cache, source string) (int64, string) {
	var best, any int64
	for _, c := range caches {
		if c.Type == "Instruction" {
			continue
		}
		any = max(any, c.SizeBytes)
		if c.Level == 3 {
			best = max(best, c.SizeBytes)
		}
	}
	switch {
	case best > 0:
		return best, source
	case any > 0:
		return any, source
	}
	return AssumedL3, "assumed"
}

// TableBytes is the naive count table's size for groups distinct keys:
// a power of two of SlotBytes slots, grown at 70 % load.
func TableBytes(groups int64) int64 {
	slots := int64(1)
	for slots*7/10 < groups {
		slots <<= 1
	}
	return slots * SlotBytes
}

// rowBytes is the memory one row costs: its Parquet bytes (about 9) and decoded
// values of both columns, and its key's copy in radix's partitions.
const rowBytes = 40

// New plans a keys table for an L3 of l3 bytes within b.
func New(l3 int64, source string, b Budget) Plan {
	p := Plan{L3Bytes: l3, L3Source: source, Budget: b}
	// The smallest power-of-two slot count whose table reaches the target.
	slots := int64(1) << bits.Len64(uint64(TargetFactor*l3/SlotBytes-1))
	g := slots * 7 / 10
	maxG := b.MaxRows / RowsPerGroup
	if mem := b.Memory / (RowsPerGroup*rowBytes + 2*SlotBytes); mem < maxG {
		maxG = mem
	}
	if g > maxG {
		g, p.Capped = maxG, true
	}
	p.Groups = max(g, 1)
	p.Rows = p.Groups * RowsPerGroup
	p.TableBytes = TableBytes(p.Groups)
	return p
}

// ForMachine plans against this machine's reported caches.
func ForMachine(b Budget) Plan {
	caches, source := latency.OSCaches()
	l3, src := L3(caches, source)
	return New(l3, src, b)
}

// ForMeasured plans against measured, the last cache level this machine
// shows one thread (latency.ProbeLastLevel): on a VM the OS and CPUID
// often report the whole host's L3, far more than a guest can use. It
// falls back to the OS figure when measured is 0, and keeps the OS figure
// for the output either way.
func ForMeasured(measured int64, b Budget) Plan {
	caches, source := latency.OSCaches()
	osL3, osSrc := L3(caches, source)
	if measured <= 0 {
		return New(osL3, osSrc, b)
	}
	p := New(measured, "measured", b)
	p.OSL3Bytes, p.OSL3Source = osL3, osSrc
	return p
}

// RuntimeBudget is the budget of where this binary runs: the browser's
// under js/wasm, the server's elsewhere.
func RuntimeBudget(cellMemory int64) Budget {
	if runtime.GOOS == "js" {
		return BrowserBudget(cellMemory)
	}
	return ServerBudget(cellMemory)
}

// Ratio is TableBytes over L3Bytes.
func (p Plan) Ratio() float64 { return float64(p.TableBytes) / float64(p.L3Bytes) }

// String describes the plan in one paragraph, for a cell's output.
func (p Plan) String() string {
	level := fmt.Sprintf("the L3 of %s (%s)", latency.FormatSize(p.L3Bytes), sourceWords(p.L3Source))
	if p.L3Source == "measured" {
		level = fmt.Sprintf("the last cache level measured here, %s (a short latency probe; used instead of the %s L3 %s, which on a VM is often the whole host's)",
			latency.FormatSize(p.L3Bytes), latency.FormatSize(p.OSL3Bytes), sourceWords(p.OSL3Source))
	}
	s := fmt.Sprintf("keys: %s rows in shuffled order, %s distinct keys (%d rows per key); "+
		"the naive hash table of k is %s = %.2f× %s; s has %d distinct keys (a %s table)",
		count(p.Rows), count(p.Groups), RowsPerGroup, latency.FormatSize(p.TableBytes), p.Ratio(),
		level, SmallGroups, latency.FormatSize(TableBytes(SmallGroups)))
	if p.Capped {
		s += fmt.Sprintf("; %d× that cache would need more than this run's budget (%s rows, %s of memory), so the table is capped there",
			TargetFactor, count(p.Budget.MaxRows), latency.FormatSize(p.Budget.Memory))
		if p.L3Source != "assumed" && p.L3Source != "measured" {
			s += " — a VM's reported L3 is often the whole host socket's, larger than the share its vCPUs get; the sweep of lesson 3 shows where this machine's cache really ends"
		}
	}
	return s + "."
}

// sourceWords says where a cache size came from, for the output.
func sourceWords(source string) string {
	if w, ok := map[string]string{"sysfs": "reported by the OS", "cpuid": "reported by CPUID",
		"assumed": "assumed: nothing reports cache sizes here"}[source]; ok {
		return w
	}
	return source
}

func count(n int64) string {
	switch {
	case n >= 1e6 && n%1e5 == 0:
		return fmt.Sprintf("%.1f M", float64(n)/1e6)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.0f k", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// Keys returns the plan's keys k: Groups distinct values, each at least
// once, the rest drawn uniformly, shuffled; the same for the same seed.
func (p Plan) Keys(seed uint64) []int64 {
	keys := p.groupIndexes(seed)
	for i, j := range keys {
		keys[i] = key(j, seed)
	}
	return keys
}

// groupIndexes returns each row's group, 0..Groups-1, in table order.
func (p Plan) groupIndexes(seed uint64) []int64 {
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	idx := make([]int64, p.Rows)
	for i := range idx {
		j := int64(i)
		if j >= p.Groups {
			j = rng.Int64N(p.Groups)
		}
		idx[i] = j
	}
	rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	return idx
}

// key is group j's key: a hash, so keys spread over the whole int64 range.
func key(j int64, seed uint64) int64 { return int64(mix(uint64(j) ^ seed)) }

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

type keyRow struct {
	K int64 `parquet:"k"`
	S int64 `parquet:"s,dict"`
}

// Parquet returns the plan's table as a Parquet file with columns k and s
// (the row's group number modulo SmallGroups).
func (p Plan) Parquet(ctx context.Context, seed uint64) ([]byte, error) {
	idx := p.groupIndexes(seed)
	var buf bytes.Buffer
	buf.Grow(len(idx)*16 + 1<<20)
	w := parquet.NewGenericWriter[keyRow](&buf)
	rows := make([]keyRow, 0, 64<<10)
	for i, j := range idx {
		rows = append(rows, keyRow{K: key(j, seed), S: j % SmallGroups})
		if len(rows) == cap(rows) || i == len(idx)-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, err := w.Write(rows); err != nil {
				return nil, fmt.Errorf("sizing: write keys: %w", err)
			}
			rows = rows[:0]
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("sizing: write keys: %w", err)
	}
	return buf.Bytes(), nil
}

// Register generates the plan's table and registers it with db as Table.
func (p Plan) Register(ctx context.Context, db *engine.DB, seed uint64) error {
	b, err := p.Parquet(ctx, seed)
	if err != nil {
		return err
	}
	if err := db.RegisterFile(Table, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("sizing: register %s: %w", Table, err)
	}
	return nil
}
