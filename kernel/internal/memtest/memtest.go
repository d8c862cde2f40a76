// Package memtest measures how much memory a function takes, for tests
// that bound memory by measurement rather than by a cgroup.
package memtest

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Peak runs f and returns the largest growth, over the value before f
// started, of the Go heap in use and of the process's resident set (which
// also sees memory mapped outside the heap, where /proc is readable),
// sampled every millisecond.
func Peak(f func()) (heap, rss int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, rss0 := int64(ms.HeapInuse), residentBytes()
	var mu sync.Mutex
	var maxHeap, maxRSS int64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r := residentBytes()
		mu.Lock()
		maxHeap = max(maxHeap, int64(ms.HeapInuse)-heap0)
		if r > 0 && rss0 > 0 {
			maxRSS = max(maxRSS, r-rss0)
		}
		mu.Unlock()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	f()
	sample()
	close(done)
	wg.Wait()
	return maxHeap, maxRSS
}

// residentBytes reads the resident set size from /proc/self/statm (0 where
// there is none).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
