//go:build !js

package spill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"cachebook/engine/vec"
)

func testColumns(rows, seed int) []*vec.Vector {
	ints := vec.NewVector(vec.Int64, rows)
	floats := vec.NewVector(vec.Float64, rows)
	strs := vec.NewVector(vec.String, rows)
	nullable := vec.NewVector(vec.Int32, rows)
	nullable.Valid = []bool{}
	for i := range rows {
		ints.AppendInt(int64(i*seed) - 7)
		floats.AppendFloat(float64(i) / 3)
		strs.AppendStr([]byte(strings.Repeat("x", i%5) + fmt.Sprint(i)))
		if i%3 == 0 {
			nullable.AppendNull()
		} else {
			nullable.AppendInt(int64(i))
		}
	}
	return []*vec.Vector{ints, floats, strs, nullable}
}

// backends open a Space of each kind under a test's temporary directory
// (left empty by the memory one).
var backends = []struct {
	name string
	open func(root string, limit int64) (*Space, error)
}{
	{"files", Open},
	{"memory", func(_ string, limit int64) (*Space, error) { return OpenMemory(limit), nil }},
}

func TestRoundTrip(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testRoundTrip(t, b.open) })
	}
}

func testRoundTrip(t *testing.T, open func(string, int64) (*Space, error)) {
	root := t.TempDir()
	s, err := open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Create()
	if err != nil {
		t.Fatal(err)
	}
	var want [][]*vec.Vector
	for i, rows := range []int{0, 1, 1000, 17} {
		cols := testColumns(rows, i+2)
		want = append(want, cols)
		if err := f.Append(cols); err != nil {
			t.Fatal(err)
		}
	}
	r, err := f.Reader()
	if err != nil {
		t.Fatal(err)
	}
	var charged int64
	for i := 0; ; i++ {
		cols, ok, err := r.Next(func(n int64) error { charged += n; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if i != len(want) {
				t.Fatalf("%d chunks, want %d", i, len(want))
			}
			break
		}
		for c := range cols {
			if !equalVectors(cols[c], want[i][c]) {
				t.Errorf("chunk %d column %d: got %+v, want %+v", i, c, cols[c], want[i][c])
			}
		}
	}
	st := s.Stats()
	if charged != st.BytesWritten || st.BytesRead != st.BytesWritten || st.Chunks != 4 || st.Files != 1 || s.Used() != f.Size() {
		t.Errorf("charged %d, stats %+v, used %d, size %d", charged, st, s.Used(), f.Size())
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if s.Used() != 0 {
		t.Errorf("used %d after remove", s.Used())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, root)
}

// equalVectors compares values, not capacities.
func equalVectors(a, b *vec.Vector) bool {
	if a.Type != b.Type || a.Len != b.Len {
		return false
	}
	for i := range a.Len {
		if a.IsNull(i) != b.IsNull(i) || (!a.IsNull(i) && !reflect.DeepEqual(a.Value(i), b.Value(i))) {
			return false
		}
	}
	return true
}

func TestLimit(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testLimit(t, b.open) })
	}
}

func testLimit(t *testing.T, open func(string, int64) (*Space, error)) {
	root := t.TempDir()
	s, err := open(root, 20<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Create()
	if err != nil {
		t.Fatal(err)
	}
	var appendErr error
	for range 100 {
		if appendErr = f.Append(testColumns(200, 1)); appendErr != nil {
			break
		}
	}
	if !errors.Is(appendErr, ErrSpaceLimit) || !strings.Contains(appendErr.Error(), "max_temp_directory_size") || !strings.Contains(appendErr.Error(), s.Dir()) {
		t.Fatalf("err = %v, want the space limit", appendErr)
	}
	if s.Used() > 20<<10 {
		t.Errorf("used %d past the limit", s.Used())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, root)
}

func TestChargeRefusal(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testChargeRefusal(t, b.open) })
	}
}

func testChargeRefusal(t *testing.T, open func(string, int64) (*Space, error)) {
	s, err := open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, _ := s.Create()
	if err := f.Append(testColumns(100, 1)); err != nil {
		t.Fatal(err)
	}
	r, err := f.Reader()
	if err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("over budget")
	if _, _, err := r.Next(func(int64) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("err = %v", err)
	}
}

// TestMemorySpace checks what sets a memory Space apart: it names memory
// where a directory would be, its bytes come back when its files are
// removed or it is closed, and a removed file cannot be written.
func TestMemorySpace(t *testing.T) {
	s := OpenMemory(0)
	if !s.InMemory() || s.Dir() != MemoryWhere {
		t.Fatalf("InMemory %v, Dir %q", s.InMemory(), s.Dir())
	}
	var files []*File
	for range 3 {
		f, err := s.Create()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Append(testColumns(500, 3)); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if st := s.Stats(); st.Files != 3 || s.Used() != 3*files[0].Size() {
		t.Errorf("stats %+v, used %d", st, s.Used())
	}
	if err := files[0].Remove(); err != nil {
		t.Fatal(err)
	}
	if err := files[0].Append(testColumns(1, 1)); err == nil {
		t.Error("append to a removed file succeeded")
	}
	if s.Used() != 2*files[1].Size() {
		t.Errorf("used %d after one remove, want %d", s.Used(), 2*files[1].Size())
	}
	if err := s.Close(); err != nil || s.Used() != 0 {
		t.Errorf("close: %v, used %d", err, s.Used())
	}
	if d, err := Open(t.TempDir(), 0); err != nil || d.InMemory() {
		t.Errorf("Open here: %v, in memory %v; want files", err, d != nil && d.InMemory())
	} else {
		d.Close()
	}
}

func TestCleanStale(t *testing.T) {
	root := t.TempDir()
	mine, err := Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	// A process id far above any the kernel hands out is not running.
	dead := filepath.Join(root, dirPrefix+"2147480000-deadbeef")
	other := filepath.Join(root, "unrelated")
	for _, d := range []string{dead, other} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	n, err := CleanStale(root)
	if err != nil || n != 1 {
		t.Fatalf("removed %d, err %v; want 1", n, err)
	}
	for _, d := range []string{mine.Dir(), other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("stale directory kept: %v", err)
	}
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}

// FuzzReader feeds damaged files to the reader: it may fail, never panic
// or allocate what the file does not hold.
func FuzzReader(f *testing.F) {
	s, err := Open(f.TempDir(), 0)
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	sf, _ := s.Create()
	if err := sf.Append(testColumns(10, 3)); err != nil {
		f.Fatal(err)
	}
	r, _ := sf.Reader()
	_ = r
	good, err := os.ReadFile(sf.path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:20])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := s.Create()
		if err != nil {
			t.Fatal(err)
		}
		defer file.Remove()
		if _, err := file.f.Write(data); err != nil {
			t.Fatal(err)
		}
		file.size = int64(len(data))
		r, err := file.Reader()
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			if _, ok, err := r.Next(nil); !ok || err != nil {
				return
			}
		}
	})
}
