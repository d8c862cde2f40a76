package latency

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"
	"unsafe"
)

// Storage is the level past DRAM: the latency of random 4 KiB reads from a
// file and the bandwidth of reading it sequentially, measured with the
// page cache bypassed where the OS allows it.
type Storage struct {
	Dir       string `json:"dir"`
	FileBytes int64  `json:"file_bytes"`
	// ReadNs is the median wall-clock time of one random 4 KiB read;
	// MinNs and MaxNs the fastest and slowest of Reads reads.
	ReadNs float64 `json:"read_ns"`
	MinNs  float64 `json:"min_ns"`
	MaxNs  float64 `json:"max_ns"`
	Reads  int     `json:"reads"`
	// SeqGBps is the sequential read bandwidth over the whole file, in
	// 1 MiB reads.
	SeqGBps float64 `json:"seq_gbps"`
	// Bypassed says the reads went around the page cache (O_DIRECT on
	// Linux, F_NOCACHE on macOS). When false the figures may be partly
	// the page cache's; Method says what was done instead.
	Bypassed bool   `json:"bypassed"`
	Method   string `json:"method"`
}

// StorageConfig configures a storage measurement.
type StorageConfig struct {
	Dir   string // where the temporary file goes (default os.TempDir())
	Bytes int64  // the file's size
	// MaxReads and MaxTime bound the random reads (defaults 2000 and 2 s);
	// at least 64 reads are made.
	MaxReads int
	MaxTime  time.Duration
	Seed     uint64
}

const (
	storageBlock = 4 << 10
	storageChunk = 1 << 20
	// storageReserve is the free space a storage measurement leaves on
	// its file system beyond its own file.
	storageReserve = 1 << 30
)

// errNoStorage is returned where no file can be timed (WebAssembly).
var errNoStorage = errors.New("storage latency is not measured here")

// MeasureStorage writes a temporary file of cfg.Bytes in cfg.Dir, then
// times random 4 KiB reads from it and one sequential pass, and removes
// it, also when ctx is cancelled. It refuses a file that would leave less
// than 1 GiB free on the file system, before writing anything.
func MeasureStorage(ctx context.Context, cfg StorageConfig) (*Storage, error) {
	if !storageSupported {
		return nil, fmt.Errorf("%w: a browser page cannot read a file around its caches; run this cell on the server to see the disk", errNoStorage)
	}
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	if cfg.MaxReads <= 0 {
		cfg.MaxReads = 2000
	}
	if cfg.MaxTime <= 0 {
		cfg.MaxTime = 2 * time.Second
	}
	cfg.Bytes = cfg.Bytes / storageChunk * storageChunk
	if cfg.Bytes < storageChunk {
		return nil, fmt.Errorf("storage: a file of %s is too small; give at least 1 MiB", FormatSize(cfg.Bytes))
	}
	if free, ok := freeBytes(cfg.Dir); ok && free < cfg.Bytes+storageReserve {
		return nil, fmt.Errorf("storage: a %s file in %s would leave less than 1 GiB free (%s free); give a smaller disk size",
			FormatSize(cfg.Bytes), cfg.Dir, FormatSize(free))
	}
	f, err := os.CreateTemp(cfg.Dir, "cachebook-storage-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	name := f.Name()
	defer os.Remove(name)
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5851f42d4c957f2d))
	err = writeStorageFile(ctx, f, cfg.Bytes, rng)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("storage: write %s: %w", name, err)
	}
	r, bypassed, method, err := openUncached(name)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", name, err)
	}
	defer r.Close()
	st := &Storage{Dir: cfg.Dir, FileBytes: cfg.Bytes, Bypassed: bypassed, Method: method}

	buf := alignedBuffer(storageChunk)
	block := buf[:storageBlock]
	blocks := cfg.Bytes / storageBlock
	// A few untimed reads first: the first read of a file pays for
	// metadata and the device waking up.
	for range 8 {
		if _, err := r.ReadAt(block, rng.Int64N(blocks)*storageBlock); err != nil {
			return nil, fmt.Errorf("storage: read: %w", err)
		}
	}
	var ns []float64
	start := time.Now()
	for len(ns) < cfg.MaxReads && (len(ns) < 64 || time.Since(start) < cfg.MaxTime) {
		if len(ns)%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		off := rng.Int64N(blocks) * storageBlock
		t := time.Now()
		if _, err := r.ReadAt(block, off); err != nil {
			return nil, fmt.Errorf("storage: read at %d: %w", off, err)
		}
		ns = append(ns, float64(time.Since(t).Nanoseconds()))
	}
	st.Reads = len(ns)
	st.ReadNs = median(ns)
	st.MinNs, st.MaxNs = slices.Min(ns), slices.Max(ns)

	if err := dropCache(r); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	t := time.Now()
	for off := int64(0); off < cfg.Bytes; off += storageChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := r.ReadAt(buf, off); err != nil {
			return nil, fmt.Errorf("storage: read at %d: %w", off, err)
		}
	}
	if d := time.Since(t); d > 0 {
		st.SeqGBps = float64(cfg.Bytes) / float64(d.Nanoseconds())
	}
	return st, nil
}

// writeStorageFile fills f with n pseudo-random bytes (a device or file
// system may store runs of zeros without writing them), syncs it and asks
// the OS to drop it from the page cache.
func writeStorageFile(ctx context.Context, f *os.File, n int64, rng *rand.Rand) error {
	chunk := make([]byte, storageChunk)
	for i := 0; i+8 <= len(chunk); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			chunk[i+j] = byte(v >> (8 * j))
		}
	}
	for off := int64(0); off < n; off += storageChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk[0], chunk[1] = byte(off>>20), byte(off>>28) // no two chunks alike
		if _, err := f.Write(chunk); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return dropCache(f)
}

// alignedBuffer returns n bytes aligned to 4 KiB, as direct I/O needs.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+storageBlock)
	skip := (storageBlock - int(uintptr(unsafe.Pointer(&b[0]))%storageBlock)) % storageBlock
	return b[skip : skip+n : skip+n]
}

// StorageSize is the file size a latency sweep up to maxBytes uses for
// its storage point when none is given: twice the largest working set, so
// the point lies past DRAM on the curve, from 64 MiB to 4 GiB.
func StorageSize(maxBytes int64) int64 {
	return min(max(2*maxBytes, 64<<20), 4<<30)
}
