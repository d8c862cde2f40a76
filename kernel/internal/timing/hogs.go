package timing

import (
	"context"
	"runtime"
	"sync"
)

// StartHogs makes the machine busy, as a laptop in a video call or a
// shared class server is, for the noise tests: cpu goroutines that spin
// and mem goroutines that each stream over their own buffer of bytes
// (writing it, then reading it). The returned function stops them and
// waits until they have.
func StartHogs(cpu, mem int, bytes int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range cpu {
		wg.Go(func() {
			x := uint64(1)
			for ctx.Err() == nil {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			runtime.KeepAlive(x)
		})
	}
	for range mem {
		wg.Go(func() {
			buf := make([]uint64, bytes/8)
			var s uint64
			for i := 0; ctx.Err() == nil; i++ {
				for j := range buf {
					if i%2 == 0 {
						buf[j] = uint64(j)
					} else {
						s += buf[j]
					}
					if j&(1<<16-1) == 0 && ctx.Err() != nil {
						break
					}
				}
			}
			runtime.KeepAlive(s)
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
