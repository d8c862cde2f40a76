package freshmem

import "testing"

func TestMapIsZeroed(t *testing.T) {
	if ok, why := Supported(); !ok {
		t.Skip(why)
	}
	b, release, err := Map(3 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("fresh mapping has byte %d = %d", i, v)
		}
	}
	b[5000] = 1
	if err := release(); err != nil {
		t.Fatal(err)
	}
}
