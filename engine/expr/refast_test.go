package expr

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"time"

	"cachebook/engine/vec"
)

// fastInputs are texts to match, ASCII and not, with and without
// newlines.
var fastInputs = []string{
	"", "/", "a", "aa", "ab", "abab", "aab", "b", "ba", "abc", "x\ny", "\n", "ab\nab",
	"https://www.example.com/a/b", "http://example.com/", "http://example.com", "https://www./x",
	"https://www.www.a/b", "http://a/b\nc", "http://a\n/b", "ftp://x/y", "https://www.a.com//",
	"https://www.yandex.ru/yandsearch?text=lola mipo", "http://wörld.ru/ü", "aaaaaaaaaa", "abcabcabc",
	"2013-07-15", "key=value&k2=v2", "  padded  ", "A1b2C3", "xyz$", "a.b.c",
}

// TestFastRE matches each pattern against each input with fastRE and
// with regexp's FindSubmatchIndex: the submatches must be the same, and
// the patterns of a shape fastRE does not take must be refused.
func TestFastRE(t *testing.T) {
	for _, tc := range []struct {
		pat  string
		fast bool
	}{
		{`^https?://(?:www\.)?([^/]+)/`, true},
		{`^https?://(?:www\.)?([^/]+)/.*$`, true},
		{`^(a+)(b*)`, true},
		{`^(a+?)(b*)`, true},
		{`^(a*?)b`, true},
		{`^(a|ab)(c|bcd)?`, true},
		{`^(a|ab)(b*)$`, true},
		{`^((a)|(b))+`, false}, // a repeat of a capture
		{`^(?:(a)|b)(c)?`, true},
		{`^(\d{4})-(\d{2})-(\d{2})$`, true},
		{`^([a-z]+)=([^&]*)`, true},
		{`^\s*(\S+)\s*$`, true},
		{`^(?s)(.*)b`, true},
		{`^(.*)b`, true},
		{`^(.{2,3})(.*)`, true},
		{`^(a?)(a?)(a?)aaa`, true},
		{`^$`, true},
		{`^(x)?$`, true},
		{`^[[:alpha:]]+([0-9])`, true},
		{`^(?P<k>[a-c]+)c`, true},
		{`^a$b`, true},
		{`^(a){0}b`, true},
		{`^(?i)ab`, false},
		{`^ab\b`, false},
		{`(?m)^ab$`, false},
		{`ab`, false},
		{`^(ab)*`, false},
		{`^ü`, false},
	} {
		re, err := syntax.Parse(tc.pat, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		f := compileFastRE(re)
		if (f != nil) != tc.fast {
			t.Errorf("%s: compiled %v, want %v", tc.pat, f != nil, tc.fast)
			continue
		}
		if f == nil {
			continue
		}
		checkFastRE(t, tc.pat, f, fastInputs)
	}
}

// checkFastRE compares f's matches of pat with regexp's on the ASCII
// inputs.
func checkFastRE(t *testing.T, pat string, f *fastRE, inputs []string) {
	t.Helper()
	std := regexp.MustCompile(pat)
	if f.ncap != std.NumSubexp()+1 {
		t.Fatalf("%s: %d groups, regexp has %d", pat, f.ncap, std.NumSubexp()+1)
	}
	buf := make([]int, 2*f.ncap)
	for _, in := range inputs {
		if !isASCII([]byte(in)) {
			continue
		}
		want := std.FindSubmatchIndex([]byte(in))
		got, done := f.match([]byte(in), buf)
		if !done {
			t.Errorf("%s on %q: gave up", pat, in)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s on %q: %v, regexp %v", pat, in, got, want)
		}
	}
}

// TestFastREBudget gives fastRE a pattern whose backtracking grows
// exponentially with the text: it must give up within its budget (a
// matcher that tried every way would take hours), and the replacer then
// asks regexp.
func TestFastREBudget(t *testing.T) {
	pat := "^" + strings.Repeat("a?", 30) + strings.Repeat("a", 30) + "$"
	re, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	f := compileFastRE(re)
	if f == nil {
		t.Fatal("not compiled")
	}
	in := []byte(strings.Repeat("a", 30) + "b")
	t0 := time.Now()
	if _, done := f.match(in, make([]int, 2*f.ncap)); done {
		t.Errorf("matched without giving up")
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("gave up after %v", d)
	}
	r := &regexpReplacer{re: regexp.MustCompile(pat), template: []byte("x")}
	r.compileFast(pat)
	if m := r.match(in, make([]int, 2)); m != nil {
		t.Errorf("matched %q: %v", in, m)
	}
	in = in[:30]
	if m := r.match(in, make([]int, 2)); !slices.Equal(m, []int{0, 30}) {
		t.Errorf("%q: %v, want [0 30]", in, m)
	}
}

// TestRegexpReplaceFast runs regexp_replace's loop with and without the
// fast matchers over every input, ASCII or not: the results must agree.
func TestRegexpReplaceFast(t *testing.T) {
	for _, pat := range []string{`^https?://(?:www\.)?([^/]+)/.*$`, `^(a+)(b*).*$`, `^([^/]*)/`, `^(\w+)\s`} {
		slow := &regexpReplacer{re: regexp.MustCompile(pat), template: []byte(convertReplacement(`<\1>`))}
		slow.elideTail(pat)
		fast := *slow
		fast.compileFast(pat)
		if fast.fast == nil {
			t.Fatalf("%s: no fast matcher", pat)
		}
		v := vec.NewVector(vec.String, len(fastInputs))
		for _, s := range fastInputs {
			v.AppendStr([]byte(s))
		}
		in := []*vec.Vector{v}
		want, err := slow.do(in, len(fastInputs))
		if err != nil {
			t.Fatal(err)
		}
		got, err := fast.do(in, len(fastInputs))
		if err != nil {
			t.Fatal(err)
		}
		for i := range fastInputs {
			if g, w := string(got.Str(i)), string(want.Str(i)); g != w {
				t.Errorf("%s on %q: %q, want %q", pat, fastInputs[i], g, w)
			}
		}
	}
}

// FuzzFastRE compares fastRE with regexp on any pattern it compiles and
// any ASCII text.
func FuzzFastRE(f *testing.F) {
	f.Add(`^https?://(?:www\.)?([^/]+)/`, "https://www.example.com/a")
	f.Add(`^(a|ab)(c|bcd)?(d*)`, "abcd")
	f.Add(`^(a+?)(b{1,3})$`, "aabbb")
	f.Fuzz(func(t *testing.T, pat, in string) {
		if len(pat) > 200 || len(in) > 1000 || !isASCII([]byte(in)) {
			return
		}
		re, err := syntax.Parse(pat, syntax.Perl)
		if err != nil {
			return
		}
		std, err := regexp.Compile(pat)
		if err != nil {
			return
		}
		fr := compileFastRE(re)
		if fr == nil {
			return
		}
		got, done := fr.match([]byte(in), make([]int, 2*fr.ncap))
		if !done {
			return
		}
		if want := std.FindSubmatchIndex([]byte(in)); !slices.Equal(got, want) {
			t.Fatalf("%s on %q: %v, regexp %v", pat, in, got, want)
		}
	})
}
