package main

import (
	"flag"
	"io"
	"testing"
)

func TestCountersFlag(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		pmu, model bool
		bad        bool
	}{
		{nil, false, false, false},
		{[]string{"--counters"}, true, false, false},
		{[]string{"--counters=model"}, false, true, false},
		{[]string{"--counters=both"}, true, true, false},
		{[]string{"--counters=maybe"}, false, false, true},
	} {
		fs := flag.NewFlagSet("q", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c countersFlag
		fs.Var(&c, "counters", "")
		err := fs.Parse(tc.args)
		if (err != nil) != tc.bad || c.pmu() != tc.pmu || c.model() != tc.model {
			t.Errorf("%v: pmu %v model %v err %v", tc.args, c.pmu(), c.model(), err)
		}
	}
	if _, err := parseGeometry("l1=32K bogus"); err == nil {
		t.Error("parseGeometry accepted a field without =")
	}
	if a, err := parseGeometry(" l3=32M  sample=1/16 "); err != nil || a["l3"] != "32M" || a["sample"] != "1/16" {
		t.Errorf("parseGeometry: %v %v", a, err)
	}
}
