package experiment

import (
	"fmt"
	"math"
	"slices"
)

// Verdict is the conclusion an experiment draws from one comparison of two
// sides measured in alternating rounds (A B, B A, A B, ...), stated with
// its spread. A busy machine may make a verdict say less ("too noisy to
// tell here"), never the opposite of what was measured: Noisy is set when
// the rounds' ratios fall on both sides of 1, or when the threads of a
// two-thread comparison did not run at the same time.
//
// Embedded in an experiment's Data, its fields appear there as "verdict",
// "noisy", "ratio", "low", "high" and "rounds".
type Verdict struct {
	// Text is the verdict in words, e.g. "packed 4.2× slower than
	// padded-128 (3.9–4.6 over 5 alternations)".
	Text string `json:"verdict,omitempty"`
	// Noisy is true when the measurement cannot tell the direction here.
	Noisy bool `json:"noisy"`
	// Ratio is the median over the rounds of side A's cost over side B's
	// (above 1: A is slower, as the model says); Low and High are the
	// smallest and largest round.
	Ratio  float64 `json:"ratio,omitempty"`
	Low    float64 `json:"low,omitempty"`
	High   float64 `json:"high,omitempty"`
	Rounds int     `json:"rounds,omitempty"`
}

// comparison names the two sides of a verdict and what the model expects:
// side A costs more than side B.
type comparison struct {
	// A is the side the model says costs more, B the other, e.g.
	// "packed" and "padded-128".
	A, B string
	// Faster words the verdict as "B r× faster than A" instead of "A r×
	// slower than B".
	Faster bool
	// Model is what the model says, for the noisy text: "packed counters
	// cost several times more when the two threads run together".
	Model string
}

// judge states c's verdict from per-round ratios cost(A)/cost(B), one per
// alternation. apart, when not empty, says why the threads did not run
// together (e.g. "the threads overlapped only 4% of the time"): then the
// verdict is "too noisy" whatever the ratios. No rounds give no verdict.
func judge(c comparison, ratios []float64, apart string) Verdict {
	var v Verdict
	// A round one of whose sides measured no time (a coarse clock: the
	// browser's) has no ratio to give.
	rs := slices.DeleteFunc(slices.Clone(ratios), func(r float64) bool { return !(r > 0) || math.IsInf(r, 0) })
	if len(rs) == 0 {
		return v
	}
	slices.Sort(rs)
	v.Rounds = len(rs)
	v.Low, v.High = rs[0], rs[len(rs)-1]
	v.Ratio = rs[len(rs)/2]
	if len(rs)%2 == 0 {
		v.Ratio = (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
	}
	over := fmt.Sprintf("over %d alternation", v.Rounds)
	if v.Rounds != 1 {
		over += "s"
	}
	switch {
	case apart != "":
		v.Noisy = true
		v.Text = fmt.Sprintf("too noisy to tell here — %s; %s vs %s: %s× (%s–%s %s); the model says %s; run it again on a quieter machine",
			apart, c.A, c.B, fmtX(v.Ratio, v.Ratio), fmtX(v.Low, v.Ratio), fmtX(v.High, v.Ratio), over, c.Model)
	case v.Low <= 1 && v.High >= 1:
		v.Noisy = true
		v.Text = fmt.Sprintf("too noisy to tell here — %s vs %s ranged %s–%s× %s, on both sides of 1; the model says %s; run it again on a quieter machine",
			c.A, c.B, fmtX(v.Low, 1), fmtX(v.High, 1), over, c.Model)
	case v.Low > 1:
		v.Text = c.state(c.A, c.B, v.Ratio, v.Low, v.High, over)
	default: // every round the other way: say so, as measured
		v.Text = c.state(c.B, c.A, 1/v.Ratio, 1/v.High, 1/v.Low, over) + "; the model says " + c.Model
	}
	return v
}

// state words "slow r× slower than fast (lo–hi over n alternations)" or,
// for Faster, "fast r× faster than slow (...)".
func (c comparison) state(slow, fast string, r, lo, hi float64, over string) string {
	if c.Faster {
		return fmt.Sprintf("%s %s× faster than %s (%s–%s %s)", fast, fmtX(r, r), slow, fmtX(lo, r), fmtX(hi, r), over)
	}
	return fmt.Sprintf("%s %s× slower than %s (%s–%s %s)", slow, fmtX(r, r), fast, fmtX(lo, r), fmtX(hi, r), over)
}

// fmtX formats ratio r with the decimals that suit the size of like (the
// median it goes with, so that a spread reads evenly): none from 10, one
// from 2, else two.
func fmtX(r, like float64) string {
	switch {
	case like >= 10:
		return fmt.Sprintf("%.0f", r)
	case like >= 2:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// median returns the median of v (the mean of the middle two for an even
// count; 0 for none) without changing v.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// alternate returns the order of n sides in round i: forwards in even
// rounds, backwards in odd ones (A B, B A, ...), so that neither side is
// always first after a pause or always second after the other's traffic.
func alternate(n, i int) []int {
	o := make([]int, n)
	for j := range o {
		o[j] = j
		if i%2 == 1 {
			o[j] = n - 1 - j
		}
	}
	return o
}
