//go:build !race

package jupyter

import "time"

// interruptBound is the longest an interrupt may take: the 200 ms target.
const interruptBound = 200 * time.Millisecond
