package engine

import "testing"

func TestSetCounters(t *testing.T) {
	db, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := db.NewSession()
	if s.Settings().Counters != "off" {
		t.Fatalf("default counters %q", s.Settings().Counters)
	}
	if err := s.Set("counters", "MODEL"); err != nil || s.Settings().Counters != "model" {
		t.Fatalf("SET counters = 'model': %v, %q", err, s.Settings().Counters)
	}
	for _, bad := range []string{"on", "both", "maybe", ""} {
		if err := s.Set("counters", bad); err == nil {
			t.Errorf("SET counters = %q accepted", bad)
		}
	}
	if err := s.Reset("counters"); err != nil || s.Settings().Counters != "off" {
		t.Errorf("RESET counters: %v, %q", err, s.Settings().Counters)
	}
}
