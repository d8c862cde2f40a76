//go:build race

package jupyter

import "time"

// interruptBound is the longest an interrupt may take in the in-process
// test. The race detector slows the engine several times over, so race
// builds only check that the interrupt works; the 200 ms target is checked
// without it (make test-interrupt, and TestJupyterClient, whose kernel is a
// normal build).
const interruptBound = time.Second
