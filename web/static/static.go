// Package static holds the notebook's browser assets, embedded in the
// binary: index.html and dist/ (the esbuild bundle built from web/ui by
// "make web", plus cachebook.wasm when "make wasm" has been run before the
// Go build). The server serves FS at "/".
package static

import (
	"embed"
	"io/fs"
)

//go:embed index.html dist
var assets embed.FS

// FS returns the embedded assets rooted at this directory: index.html,
// dist/app.js, dist/app.css, dist/worker.js, dist/wasm_exec.js and, when
// it was built, dist/cachebook.wasm.
func FS() fs.FS { return assets }

// HasWasm reports whether the WebAssembly build was embedded.
func HasWasm() bool {
	_, err := fs.Stat(assets, "dist/cachebook.wasm")
	return err == nil
}
