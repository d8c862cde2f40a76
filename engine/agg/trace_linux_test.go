package agg

import "testing"

func TestTraceHugeMin(t *testing.T) {
	if traceHugeMin != hugeMin {
		t.Errorf("trace puts allocations of %d B and more on huge pages, the arena %d B", traceHugeMin, hugeMin)
	}
}
