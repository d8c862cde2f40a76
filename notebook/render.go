package notebook

import (
	"bytes"
	"fmt"
)

// RenderHTML renders Markdown prose to HTML with the GitHub Flavored
// Markdown extensions (tables, strikethrough, task lists, autolinks) and
// footnotes. Raw HTML in the input is not passed through: goldmark replaces
// it with a "raw HTML omitted" comment, and links with dangerous schemes
// (javascript:, vbscript:, file:, data: other than images) lose their
// target. This is goldmark's safe default; it must stay that way because
// notebooks may come from anyone.
func RenderHTML(markdownText string) (string, error) {
	var buf bytes.Buffer
	if err := markdown().Convert([]byte(markdownText), &buf); err != nil {
		return "", fmt.Errorf("notebook: render markdown: %w", err)
	}
	return buf.String(), nil
}
