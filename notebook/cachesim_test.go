package notebook

import "testing"

func TestCachesimCell(t *testing.T) {
	nb, err := Parse([]byte("# t\n\n```cachesim {l3=32M, prefetch=stride}\nrandom size=64M n=1M\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	var c *Cell
	for i := range nb.Cells {
		if nb.Cells[i].Kind == KindCachesim {
			c = nb.Cells[i]
		}
	}
	if c == nil || c.Source != "random size=64M n=1M" || c.Attrs["l3"] != "32M" || c.Attrs["prefetch"] != "stride" {
		t.Fatalf("cells %+v", nb.Cells)
	}
}
