package jupyter

import (
	"encoding/json"
	"testing"
)

func TestRequestPrediction(t *testing.T) {
	const spec = `{"question": "q", "unit": "ns", "measure": "points[last].ns"}`
	tests := []struct {
		name      string
		meta      string
		spec      bool
		guess     float64 // 0: none
		wantGuess bool
	}{
		{"none", `{}`, false, 0, false},
		{"empty", ``, false, 0, false},
		{"spec and guess", `{"cachebook": {"predict": ` + spec + `, "guess": {"value": 90}}}`, true, 90, true},
		{"as exported", `{"cachebook": {"meta": {"predict": ` + spec + `, "guess": {"value": 80}}}}`, true, 80, true},
		{"spec only", `{"cachebook": {"predict": ` + spec + `}}`, true, 0, false},
		{"bad spec", `{"cachebook": {"predict": {"question": "q"}}}`, false, 0, false},
		{"guess of the wrong kind", `{"cachebook": {"predict": ` + spec + `, "guess": {"choice": "x"}}}`, true, 0, false},
		{"not JSON", `{`, false, 0, false},
	}
	for _, tt := range tests {
		s, g := requestPrediction(json.RawMessage(tt.meta))
		if (s != nil) != tt.spec || (g != nil) != tt.wantGuess {
			t.Errorf("%s: spec %v guess %v, want spec %v guess %v", tt.name, s, g, tt.spec, tt.wantGuess)
			continue
		}
		if g != nil && (g.Value == nil || *g.Value != tt.guess) {
			t.Errorf("%s: guess %+v, want %v", tt.name, g, tt.guess)
		}
	}
}
