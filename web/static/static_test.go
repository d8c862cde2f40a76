package static

import (
	"io/fs"
	"strings"
	"testing"
)

func TestFS(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"index.html", `<script type="module" src="dist/app.js">`},
		{"index.html", `dist/app.css`},
		{"dist/app.js", "cachebook"},
		{"dist/app.css", ".cell"},
		{"dist/worker.js", "cachebook"},
		{"dist/wasm_exec.js", "Go"},
	}
	for _, tt := range tests {
		b, err := fs.ReadFile(FS(), tt.path)
		if err != nil {
			t.Errorf("%s: %v", tt.path, err)
			continue
		}
		if !strings.Contains(string(b), tt.want) {
			t.Errorf("%s does not contain %q", tt.path, tt.want)
		}
	}
}
