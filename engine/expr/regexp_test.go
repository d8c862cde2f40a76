package expr

import (
	"regexp"
	"testing"
)

// TestRegexpElideTail checks that a pattern ^R.*$ matched as R (with
// the match stretched to the end) gives what the whole pattern gives, on
// strings with and without newlines, and that other patterns keep the
// whole pattern.
func TestRegexpElideTail(t *testing.T) {
	inputs := []string{
		"", "/", "https://www.example.com/a/b", "http://example.com/", "http://example.com",
		"https://www.yandex.ru/yandsearch?text=lola mipo", "ftp://x/y", "https://www./x",
		"https://www.www.a/b", "http://a/b\nc", "http://a\n/b", "\n", "x\ny", "http://wörld.ru/ü",
		"https://www.a.com//", "aaa", "ab\nab",
	}
	for _, tc := range []struct {
		pat    string
		elided bool
	}{
		{`^https?://(?:www\.)?([^/]+)/.*$`, true},
		{`^(a+)(b*).*$`, true},
		{`^(?s)(a|ab)(.*)x.*$`, true},
		{`(?s)^(h).*$`, true},
		{`(?i)^(H)T.*$`, true},
		{`^(?P<host>[^/]*).*$`, true},
		{`^.*$`, true},
		{`^(a).*?$`, false},
		{`^(a).*`, false},
		{`(a).*$`, false},
		{`^(a).+$`, false},
		{`(?m)^(a).*$`, false},
		{`^(a|).*$\z`, false},
	} {
		full := regexp.MustCompile(tc.pat)
		r := &regexpReplacer{re: full}
		r.elideTail(tc.pat)
		if (r.head != nil) != tc.elided {
			t.Errorf("%s: elided %v, want %v", tc.pat, r.head != nil, tc.elided)
			continue
		}
		for _, in := range inputs {
			want := full.FindSubmatchIndex([]byte(in))
			got := r.match([]byte(in), make([]int, 2*(full.NumSubexp()+1)))
			if len(got) != len(want) {
				t.Errorf("%s on %q: got %v, want %v", tc.pat, in, got, want)
				continue
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s on %q: got %v, want %v", tc.pat, in, got, want)
					break
				}
			}
		}
	}
}
