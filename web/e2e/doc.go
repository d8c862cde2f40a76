// Package e2e holds the notebook's end-to-end tests: they build the
// cachebook binary, generate a small hits table, start "cachebook serve"
// and drive the UI in headless Chromium with chromedp.
//
// The tests skip with a message when no Chromium is installed (Debian:
// apt-get install -y chromium). Set CACHEBOOK_E2E_URL to test a server that
// is already running instead, and pass -screenshots DIR to save PNGs of
// the main views (make screenshots writes them to docs/screenshots).
package e2e
