// Package param declares the parameters of measurement cells and
// experiments once — name, type, default, bounds, unit and help — and parses
// them the same way for every reader: the command-line flags of
// cachebook latency/bandwidth/sweep/experiment, the kernel's cells on the
// server and the kernel compiled to WebAssembly in the browser.
//
// Bounds in a Param are the same on every runtime. What differs between
// runtimes is only explicit: the per-cell memory limit (the server's
// --cell-memory, the browser's heap) that a Spec's Memory estimate is
// checked against, and the number of threads a cell may use.
//
// Sizes are parsed by cachebook/engine/units, the project's one byte-size
// parser.
package param

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"cachebook/engine/units"
)

// Type is the type of a parameter's value.
type Type string

// The parameter types.
const (
	// Int is a whole number: 1000, 10_000 or 1e6.
	Int Type = "int"
	// Bytes is a size parsed by units.ParseBytes: 4096, 64K, 256MiB, 1GB.
	Bytes Type = "bytes"
	// Duration is a Go duration: 20ms, 2s.
	Duration Type = "duration"
	// Float is a decimal number.
	Float Type = "float"
	// Bool is true or false (also on/off, yes/no, 1/0).
	Bool Type = "bool"
	// String is free text, or one of Choices when they are given.
	String Type = "string"
)

// Param documents and bounds one parameter.
type Param struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
	// Default is the value's text when the parameter is not given; empty
	// means "not set" (the consumer picks, e.g. bandwidth's 1 and NumCPU
	// threads).
	Default string `json:"default"`
	Help    string `json:"help"`
	// Unit names what the number counts (rows, bytes, ns), for display.
	Unit string `json:"unit,omitempty"`
	// Min and Max bound every value (for Duration in nanoseconds) when
	// Max > Min; both inclusive.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// List marks a comma-separated list of values of Type.
	List bool `json:"list,omitempty"`
	// Choices, when set, are the only values a String accepts.
	Choices []string `json:"choices,omitempty"`
}

// Error is a parameter that failed to parse or is out of bounds.
type Error struct {
	Name, Value string
	Err         error
}

func (e *Error) Error() string { return fmt.Sprintf("parameter %s=%q: %v", e.Name, e.Value, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// UnknownError names parameters a cell or command does not take.
type UnknownError struct {
	Unknown []string
	Known   []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown parameter(s) %s (this takes: %s)", strings.Join(e.Unknown, ", "), strings.Join(e.Known, ", "))
}

// MemoryError says a run would need more memory than the per-cell limit
// allows. It is returned before anything is allocated.
type MemoryError struct {
	// What needs the memory, e.g. "latency max=8GiB".
	What  string
	Need  int64
	Limit int64
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("%s needs about %s of memory, more than the per-cell limit of %s: choose smaller parameters (or start the server with a larger --cell-memory)",
		e.What, units.HumanBytes(e.Need), units.HumanBytes(e.Limit))
}

// ThreadsError says a run wants more threads than the runtime has.
type ThreadsError struct {
	Want, Have int
}

func (e *ThreadsError) Error() string {
	if e.Have == 1 {
		return fmt.Sprintf("this needs %d threads and this runtime runs a cell on one", e.Want)
	}
	return fmt.Sprintf("this needs %d threads and this runtime allows %d", e.Want, e.Have)
}

// Values are parsed parameters. The zero value has nothing set.
type Values struct {
	params []Param
	text   map[string]string // effective text, defaults included
	set    map[string]bool   // given explicitly
	val    map[string]any    // parsed: int64, float64, time.Duration, bool, string, or slices of them
}

// Parse checks raw (name → text) against params: unknown names are an
// error, missing ones take their defaults, and every value is parsed and
// bounds-checked. The first failing parameter (in params order) is
// reported as an *Error.
func Parse(params []Param, raw map[string]string) (Values, error) {
	v := Values{params: params, text: map[string]string{}, set: map[string]bool{}, val: map[string]any{}}
	var unknown []string
	for k := range raw {
		if !slices.ContainsFunc(params, func(p Param) bool { return p.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return v, &UnknownError{Unknown: unknown, Known: Names(params)}
	}
	for _, p := range params {
		s, ok := raw[p.Name]
		s = strings.TrimSpace(s)
		if !ok {
			s = p.Default
		}
		v.text[p.Name], v.set[p.Name] = s, ok
		if s == "" && !ok {
			continue // no default: unset
		}
		x, err := p.parse(s)
		if err != nil {
			return v, &Error{Name: p.Name, Value: s, Err: err}
		}
		v.val[p.Name] = x
	}
	return v, nil
}

// Names returns the names of params, in order.
func Names(params []Param) []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.Name
	}
	return out
}

// Lookup returns the parameter called name.
func Lookup(params []Param, name string) (Param, bool) {
	i := slices.IndexFunc(params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return params[i], true
}

func (p Param) parse(s string) (any, error) {
	if !p.List {
		return p.parseOne(s)
	}
	var out []any
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		x, err := p.parseOne(f)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, errors.New("want at least one value")
	}
	switch p.Type {
	case Int, Bytes:
		return mapSlice[int64](out), nil
	case Float:
		return mapSlice[float64](out), nil
	case Duration:
		return mapSlice[time.Duration](out), nil
	case Bool:
		return mapSlice[bool](out), nil
	}
	return mapSlice[string](out), nil
}

func mapSlice[T any](xs []any) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = x.(T)
	}
	return out
}

func (p Param) parseOne(s string) (any, error) {
	var f float64
	var x any
	switch p.Type {
	case Int:
		n, err := ParseInt(s)
		if err != nil {
			return nil, err
		}
		f, x = float64(n), n
	case Bytes:
		n, err := units.ParseBytes(s)
		if err != nil {
			return nil, err
		}
		f, x = float64(n), n
	case Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, errors.New("want a duration such as 20ms or 2s")
		}
		f, x = float64(d), d
	case Float:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("want a number")
		}
		f, x = v, v
	case Bool:
		switch strings.ToLower(s) {
		case "true", "on", "yes", "1":
			return true, nil
		case "false", "off", "no", "0":
			return false, nil
		}
		return nil, errors.New("want true or false")
	default:
		if len(p.Choices) > 0 && !slices.Contains(p.Choices, s) {
			return nil, fmt.Errorf("want one of %s", strings.Join(p.Choices, ", "))
		}
		return s, nil
	}
	if p.Max > p.Min && (f < p.Min || f > p.Max) {
		return nil, fmt.Errorf("want %s..%s", p.format(p.Min), p.format(p.Max))
	}
	return x, nil
}

// format writes a bound in the parameter's own notation.
func (p Param) format(f float64) string {
	switch p.Type {
	case Bytes:
		return units.FormatBytes(int64(f))
	case Duration:
		return time.Duration(f).String()
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// ParseInt parses a whole number: 1000, 10_000, 1e6 (at most 2^53 for the
// exponent form, exactly).
func ParseInt(s string) (int64, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, errors.New("want a whole number such as 1000, 10_000 or 1e6")
	}
	return int64(f), nil
}

// IsSet reports whether name was given explicitly.
func (v Values) IsSet(name string) bool { return v.set[name] }

// Has reports whether name has a value (given or by default).
func (v Values) Has(name string) bool { _, ok := v.val[name]; return ok }

// Text returns name's effective text ("" when unset).
func (v Values) Text(name string) string { return v.text[name] }

// Effective returns every parameter's effective text, defaults included.
func (v Values) Effective() map[string]string {
	out := make(map[string]string, len(v.text))
	for k, s := range v.text {
		out[k] = s
	}
	return out
}

// Int returns an Int or Bytes parameter (0 when unset).
func (v Values) Int(name string) int64 { x, _ := v.val[name].(int64); return x }

// Ints returns a list of Int or Bytes values.
func (v Values) Ints(name string) []int64 { x, _ := v.val[name].([]int64); return x }

// Float returns a Float parameter.
func (v Values) Float(name string) float64 { x, _ := v.val[name].(float64); return x }

// Duration returns a Duration parameter.
func (v Values) Duration(name string) time.Duration { x, _ := v.val[name].(time.Duration); return x }

// Bool returns a Bool parameter.
func (v Values) Bool(name string) bool { x, _ := v.val[name].(bool); return x }

// String returns a String parameter.
func (v Values) String(name string) string { x, _ := v.val[name].(string); return x }

// Strings returns a list of String values.
func (v Values) Strings(name string) []string { x, _ := v.val[name].([]string); return x }

// Set replaces name's value with text, parsed and checked like a given
// value but not marked as given (Fit uses it to shrink defaults).
func (v *Values) Set(name, text string) error {
	p, ok := Lookup(v.params, name)
	if !ok {
		return &UnknownError{Unknown: []string{name}, Known: Names(v.params)}
	}
	x, err := p.parse(text)
	if err != nil {
		return &Error{Name: name, Value: text, Err: err}
	}
	v.text[name], v.val[name] = text, x
	return nil
}

// Fit makes a run fit in limit bytes. need estimates the memory a run
// with v needs. When it exceeds limit and name (an Int or Bytes parameter)
// was not given explicitly, Fit halves name's default until the run fits
// or the value reaches the parameter's minimum; otherwise it returns a
// *MemoryError naming what. A limit ≤ 0 means no limit.
func (v *Values) Fit(limit int64, name, what string, need func(Values) int64) error {
	if limit <= 0 {
		return nil
	}
	p, _ := Lookup(v.params, name)
	for n := need(*v); n > limit; n = need(*v) {
		cur := v.Int(name)
		if v.IsSet(name) || cur/2 < int64(p.Min) || cur < 2 {
			return &MemoryError{What: what, Need: n, Limit: limit}
		}
		text := strconv.FormatInt(cur/2, 10)
		if p.Type == Bytes {
			text = units.FormatBytes(cur / 2)
		}
		if err := v.Set(name, text); err != nil {
			return err
		}
	}
	return nil
}

// FlagSet registers one string flag per parameter on fs, with the
// parameter's help, default and bounds, and returns a function that
// collects the flags the user set as raw values for Parse.
func FlagSet(fs *flag.FlagSet, params []Param) func() map[string]string {
	vals := map[string]*string{}
	for _, p := range params {
		vals[p.Name] = fs.String(p.Name, p.Default, p.Usage())
	}
	return func() map[string]string {
		raw := map[string]string{}
		fs.Visit(func(f *flag.Flag) {
			if s, ok := vals[f.Name]; ok {
				raw[f.Name] = *s
			}
		})
		return raw
	}
}

// Usage is the parameter's help with its bounds and unit.
func (p Param) Usage() string {
	var b strings.Builder
	b.WriteString(p.Help)
	var extra []string
	if p.Max > p.Min {
		extra = append(extra, p.format(p.Min)+".."+p.format(p.Max))
	}
	if len(p.Choices) > 0 {
		extra = append(extra, "one of "+strings.Join(p.Choices, ", "))
	}
	if p.List {
		extra = append(extra, "comma-separated")
	}
	if len(extra) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(extra, "; "))
	}
	return b.String()
}
