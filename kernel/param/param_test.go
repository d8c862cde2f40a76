package param

import (
	"errors"
	"flag"
	"io"
	"slices"
	"testing"
	"time"
)

var testParams = []Param{
	{Name: "n", Type: Int, Default: "1e3", Min: 1, Max: 1e6},
	{Name: "size", Type: Bytes, Default: "64K", Min: 4096, Max: 1 << 30},
	{Name: "d", Type: Duration, Default: "20ms", Min: 1e6, Max: 1e10},
	{Name: "f", Type: Float, Default: "0.5", Min: 0, Max: 1},
	{Name: "b", Type: Bool, Default: "true"},
	{Name: "ops", Type: String, List: true, Default: "read,write", Choices: []string{"read", "write", "copy"}},
	{Name: "threads", Type: Int, List: true, Min: 1, Max: 64},
}

func TestParse(t *testing.T) {
	v, err := Parse(testParams, map[string]string{"n": "10_000", "size": "1MB", "ops": "copy, read", "b": "off"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Int("n") != 10000 || v.Int("size") != 1e6 || v.Duration("d") != 20*time.Millisecond || v.Float("f") != 0.5 ||
		v.Bool("b") || !slices.Equal(v.Strings("ops"), []string{"copy", "read"}) || v.Has("threads") || !v.IsSet("n") || v.IsSet("d") {
		t.Errorf("values %+v", v)
	}
	for _, c := range []struct {
		raw  map[string]string
		name string
	}{
		{map[string]string{"n": "0"}, "n"},
		{map[string]string{"n": "1.5"}, "n"},
		{map[string]string{"size": "1KB"}, "size"},
		{map[string]string{"size": "8XB"}, "size"},
		{map[string]string{"d": "2h"}, "d"},
		{map[string]string{"f": "NaN"}, "f"},
		{map[string]string{"b": "maybe"}, "b"},
		{map[string]string{"ops": "fly"}, "ops"},
		{map[string]string{"ops": " , "}, "ops"},
		{map[string]string{"threads": "1,65"}, "threads"},
	} {
		_, err := Parse(testParams, c.raw)
		var pe *Error
		if !errors.As(err, &pe) || pe.Name != c.name {
			t.Errorf("%v: %v, want an error for %s", c.raw, err, c.name)
		}
	}
	var ue *UnknownError
	if _, err := Parse(testParams, map[string]string{"zz": "1", "aa": "2"}); !errors.As(err, &ue) || !slices.Equal(ue.Unknown, []string{"aa", "zz"}) {
		t.Errorf("unknown: %v", err)
	}
}

func TestFit(t *testing.T) {
	need := func(v Values) int64 { return v.Int("size") * 4 }
	v, _ := Parse(testParams, nil)
	if err := v.Fit(64<<10, "size", "x", need); err != nil || v.Int("size") != 16<<10 || v.Text("size") != "16KiB" {
		t.Errorf("fit default: %d %q %v", v.Int("size"), v.Text("size"), err)
	}
	v, _ = Parse(testParams, nil)
	var me *MemoryError
	if err := v.Fit(1024, "size", "x", need); !errors.As(err, &me) {
		t.Errorf("below the minimum: %v", err)
	}
	v, _ = Parse(testParams, map[string]string{"size": "64K"})
	if err := v.Fit(64<<10, "size", "x", need); !errors.As(err, &me) || me.Need != 256<<10 {
		t.Errorf("explicit: %v", err)
	}
	if err := v.Fit(0, "size", "x", need); err != nil {
		t.Errorf("no limit: %v", err)
	}
}

func TestFlagSet(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	raw := FlagSet(fs, testParams)
	if err := fs.Parse([]string{"--n", "5", "--ops=copy"}); err != nil {
		t.Fatal(err)
	}
	got := raw()
	if len(got) != 2 || got["n"] != "5" || got["ops"] != "copy" {
		t.Errorf("raw %v", got)
	}
	if u := testParams[0].Usage(); u != " (1..1e+06)" {
		t.Logf("usage %q", u)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1e3", "64K", "-1", "1,2", "20ms", "NaN", "9e99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range testParams {
			v, err := Parse(testParams, map[string]string{p.Name: s})
			if err != nil {
				continue
			}
			switch p.Type {
			case Int, Bytes:
				if p.List {
					for _, n := range v.Ints(p.Name) {
						if float64(n) < p.Min || float64(n) > p.Max {
							t.Fatalf("%s=%q: %d out of bounds", p.Name, s, n)
						}
					}
				} else if n := v.Int(p.Name); float64(n) < p.Min || float64(n) > p.Max {
					t.Fatalf("%s=%q: %d out of bounds", p.Name, s, n)
				}
			case Float:
				if f := v.Float(p.Name); f < p.Min || f > p.Max {
					t.Fatalf("%s=%q: %g out of bounds", p.Name, s, f)
				}
			}
		}
	})
}
