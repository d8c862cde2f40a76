package bandwidth

import (
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	tests := []struct {
		name        string
		one, two    []float64 // seconds per round
		shareOne    float64
		shareTwo    float64
		noisy       bool
		wantVerdict string
	}{
		{"shared channels", []float64{1, 1, 1}, []float64{1.5, 1.4, 1.6}, 0.99, 0.98, false, "2 threads move 1.33× one thread's bytes per second (1.25–1.43 over 3 alternations"},
		{"fewer bytes in a round", []float64{1, 1, 1}, []float64{1.5, 2.5, 1.6}, 0.99, 0.98, true, "too noisy to tell here — 2 threads moved fewer bytes per second than one in some rounds"},
		{"threads without their CPUs", []float64{1, 1, 1}, []float64{1.5, 1.4, 1.6}, 0.99, 0.49, true, "too noisy to tell here — the threads did not get their CPUs"},
		{"no CPU clock", []float64{1, 1, 1}, []float64{1.1, 1.1, 1.1}, 0, 0, false, "2 threads move 1.82× one thread's bytes per second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := []Result{{Op: Read, Threads: 1, CPUShare: tt.shareOne}, {Op: Read, Threads: 2, CPUShare: tt.shareTwo}}
			compare(res, [][]float64{tt.one, tt.two})
			if res[0].Verdict != "" {
				t.Errorf("one thread got a verdict: %q", res[0].Verdict)
			}
			if res[1].Noisy != tt.noisy || !strings.HasPrefix(res[1].Verdict, tt.wantVerdict) {
				t.Errorf("noisy %v, verdict\n%q\nwant %v and prefix\n%q", res[1].Noisy, res[1].Verdict, tt.noisy, tt.wantVerdict)
			}
		})
	}
}
