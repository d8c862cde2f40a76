package notebook

import (
	"strings"
	"testing"
)

func TestRenderHTML(t *testing.T) {
	tests := []struct {
		name, md string
		want     []string
	}{
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |\n", []string{"<table>", "<td>1</td>"}},
		{"strikethrough", "~~gone~~", []string{"<del>gone</del>"}},
		{"tasklist", "- [x] done\n- [ ] todo\n", []string{`type="checkbox"`, "checked"}},
		{"footnote", "text[^1]\n\n[^1]: the note\n", []string{`class="footnotes"`, "the note"}},
		{"autolink", "see https://example.com now", []string{`<a href="https://example.com">`}},
		{"heading id", "# The latency hierarchy\n", []string{`<h1 id="the-latency-hierarchy">`}},
	}
	for _, tt := range tests {
		html, err := RenderHTML(tt.md)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(html, w) {
				t.Errorf("%s: %q lacks %q", tt.name, html, w)
			}
		}
	}
}

// TestRenderHTMLIsSafe checks that raw HTML and dangerous links from a
// notebook do not reach the page.
func TestRenderHTMLIsSafe(t *testing.T) {
	for _, md := range []string{
		"<script>alert(1)</script>",
		"text <script>alert(1)</script> inline",
		"<div onclick=\"alert(1)\">x</div>",
		"<img src=x onerror=alert(1)>",
		"[click](javascript:alert(1))",
		"[click](JAVASCRIPT:alert(1))",
		"![i](javascript:alert(1))",
		"<iframe src=\"https://evil.example\"></iframe>",
		"<!-- cachebook: {\"notebook\": {}} -->\n<style>body{}</style>",
		"```sql\n</code><script>alert(1)</script>\n```",
	} {
		html, err := RenderHTML(md)
		if err != nil {
			t.Fatal(err)
		}
		low := strings.ToLower(html)
		for _, bad := range []string{"<script", "onerror=", "onclick=", "javascript:", "<iframe", "<style", "<img src=\"x\""} {
			if strings.Contains(low, bad) {
				t.Errorf("RenderHTML(%q) = %q contains %q", md, html, bad)
			}
		}
	}
}
