//go:build !(js && wasm)

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "web/wasm: build with GOOS=js GOARCH=wasm (make wasm)")
	os.Exit(2)
}
