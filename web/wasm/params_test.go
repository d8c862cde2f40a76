package main

import "testing"

func TestParams(t *testing.T) {
	tests := []struct {
		name    string
		attrs   map[string]string
		src     string
		want    map[string]string
		wantErr bool
	}{
		{"attrs and source", map[string]string{"max": "64M", "counters": "on"}, "# comment\nppo=2 reps=3\n", map[string]string{"max": "64M", "ppo": "2", "reps": "3"}, false},
		{"source wins", map[string]string{"max": "64M"}, "max=8M", map[string]string{"max": "8M"}, false},
		{"empty", nil, "  \n", map[string]string{}, false},
		{"unknown", nil, "huge=true", nil, true},
		{"not key=value", nil, "max", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := params(tt.attrs, tt.src, "min", "max", "ppo", "reps")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestBoundedInt(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{{"3", 3, true}, {"0", 0, false}, {"x", 0, false}, {"101", 0, false}}
	for _, tt := range tests {
		got, err := boundedInt(tt.in, 1, 100)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("boundedInt(%q) = %d, %v", tt.in, got, err)
		}
	}
}
