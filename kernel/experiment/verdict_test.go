package experiment

import (
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	slower := comparison{A: "packed", B: "padded-128", Model: "packed costs more"}
	faster := comparison{A: "naive", B: "radix", Faster: true, Model: "radix wins"}
	tests := []struct {
		name   string
		c      comparison
		ratios []float64
		apart  string
		noisy  bool
		ratio  float64
		want   string
	}{
		{"the model's direction", slower, []float64{4.6, 3.9, 4.2, 4.4, 4.1}, "", false, 4.2,
			"packed 4.2× slower than padded-128 (3.9–4.6 over 5 alternations)"},
		{"worded as faster", faster, []float64{1.4, 1.8, 1.6}, "", false, 1.6,
			"radix 1.60× faster than naive (1.40–1.80 over 3 alternations)"},
		{"even count", slower, []float64{2, 4}, "", false, 3, "packed 3.0× slower than padded-128 (2.0–4.0 over 2 alternations)"},
		{"on both sides of 1", faster, []float64{0.73, 1.32, 3.96, 2.85}, "", true, 2.085,
			"too noisy to tell here — naive vs radix ranged 0.73–3.96× over 4 alternations, on both sides of 1; the model says radix wins; run it again on a quieter machine"},
		{"exactly 1 is not a direction", slower, []float64{1, 1.2}, "", true, 1.1, "too noisy to tell here"},
		{"threads apart", slower, []float64{1.01, 0.99, 1.0}, "the threads overlapped only 4% of the time", true, 1,
			"too noisy to tell here — the threads overlapped only 4% of the time; packed vs padded-128: 1.00× (0.99–1.01 over 3 alternations); the model says packed costs more; run it again on a quieter machine"},
		{"apart wins over a clear ratio", slower, []float64{5, 6, 7}, "the threads did not run together", true, 6, "too noisy to tell here — the threads did not run together"},
		{"the opposite, as measured", slower, []float64{0.8, 0.75, 0.7}, "", false, 0.75,
			"padded-128 1.33× slower than packed (1.25–1.43 over 3 alternations); the model says packed costs more"},
		{"one round", slower, []float64{2.5}, "", false, 2.5, "packed 2.5× slower than padded-128 (2.5–2.5 over 1 alternation)"},
		{"no usable rounds", slower, []float64{0, -1}, "", false, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(tt.c, tt.ratios, tt.apart)
			if v.Noisy != tt.noisy || v.Ratio != tt.ratio {
				t.Errorf("noisy %v ratio %v, want %v %v (%+v)", v.Noisy, v.Ratio, tt.noisy, tt.ratio, v)
			}
			if !strings.HasPrefix(v.Text, tt.want) || tt.want == "" && v.Text != "" {
				t.Errorf("text\n%q\nwant prefix\n%q", v.Text, tt.want)
			}
		})
	}
}

func TestAlternate(t *testing.T) {
	if got := alternate(3, 0); got[0] != 0 || got[2] != 2 {
		t.Errorf("round 0: %v", got)
	}
	if got := alternate(3, 1); got[0] != 2 || got[2] != 0 {
		t.Errorf("round 1: %v", got)
	}
}
