package e2e

import "flag"

// wasmLessons limits TestStaticSiteEveryLesson to some lessons
// (comma-separated ids), for a quicker look at one.
var wasmLessons = flag.String("wasm-lessons", "", "comma-separated lesson ids TestStaticSiteEveryLesson runs (default: all)")
