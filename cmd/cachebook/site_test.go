package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"cachebook/notebook"
	"cachebook/web"
)

type fakeLessons []string

func (f fakeLessons) List() ([]web.LessonInfo, error) {
	var out []web.LessonInfo
	for _, id := range f {
		out = append(out, web.LessonInfo{ID: id, Title: "T " + id})
	}
	return out, nil
}

func (f fakeLessons) Open(id string) (*notebook.Notebook, error) {
	return notebook.Parse([]byte("# T " + id + "\n\n```sql\nSELECT 1\n```\n"))
}

const testPage = "<!doctype html>\n<head>\n<meta charset=\"utf-8\">\n<link rel=\"stylesheet\" href=\"dist/class.css\">\n</head>\n<script type=\"module\" src=\"dist/app.js\"></script>\n<script type=\"module\" src=\"dist/class.js\"></script>\n"

func testAssets(wasm bool) fstest.MapFS {
	fs := fstest.MapFS{"index.html": {Data: []byte(testPage)}}
	for _, a := range siteAssets {
		if a != "cachebook.wasm" || wasm {
			fs["dist/"+a] = &fstest.MapFile{Data: []byte(a)}
		}
	}
	return fs
}

// TestWriteSite: the site has the page marked static without the class
// view, the assets, every lesson's reply and the lesson list; a directory
// with other files, a binary without the wasm and an id that cannot name
// a file are refused.
func TestWriteSite(t *testing.T) {
	tmp := t.TempDir()
	other := filepath.Join(tmp, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "thesis.tex"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		dir     string
		wasm    bool
		lessons fakeLessons
		wantErr string
	}{
		{"fresh", filepath.Join(tmp, "site"), true, fakeLessons{"01-a", "02-b"}, ""},
		{"rewritten", filepath.Join(tmp, "site"), true, fakeLessons{"01-a"}, ""},
		{"not a site", other, true, fakeLessons{"01-a"}, "holds no cachebook site"},
		{"no wasm", filepath.Join(tmp, "nowasm"), false, fakeLessons{"01-a"}, "without cachebook.wasm"},
		{"bad id", filepath.Join(tmp, "badid"), true, fakeLessons{"../x"}, "cannot name a file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := writeSite(tt.dir, testAssets(tt.wasm), tt.lessons)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.lessons != len(tt.lessons) {
				t.Errorf("%d lessons written, want %d", n.lessons, len(tt.lessons))
			}
			page, _ := os.ReadFile(filepath.Join(tt.dir, "index.html"))
			if !strings.Contains(string(page), staticMarker) || !strings.Contains(string(page), `http-equiv="Content-Security-Policy" content="default-src &#39;self&#39;`) || strings.Contains(string(page), "frame-ancestors") || strings.Contains(string(page), "class.") || !strings.Contains(string(page), "dist/app.js") {
				t.Errorf("page:\n%s", page)
			}
			for _, a := range siteAssets {
				if _, err := os.Stat(filepath.Join(tt.dir, "dist", a)); err != nil {
					t.Error(err)
				}
			}
			var list struct {
				Lessons []web.LessonInfo `json:"lessons"`
			}
			b, err := os.ReadFile(filepath.Join(tt.dir, "lessons", "index.json"))
			if err != nil || json.Unmarshal(b, &list) != nil || len(list.Lessons) != len(tt.lessons) {
				t.Errorf("lessons/index.json = %s, %v", b, err)
			}
			var l struct {
				Notebook web.Doc `json:"notebook"`
			}
			b, err = os.ReadFile(filepath.Join(tt.dir, "lessons", tt.lessons[0]+".json"))
			if err != nil || json.Unmarshal(b, &l) != nil || len(l.Notebook.Cells) != 2 || l.Notebook.Cells[1].Source != "SELECT 1" {
				t.Errorf("lesson reply = %s, %v", b, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(tmp, "nowasm")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a binary without the wasm wrote a site anyway (%v)", err)
	}
}
