//go:build !linux

package experiment

// releaseSupported reports that pages cannot be released here.
func releaseSupported() (bool, string) {
	return false, "releasing pages (madvise, munmap) is only implemented on Linux"
}

// reusable is a plain Go buffer here: it can only be kept.
type reusable struct{ b []byte }

func newReusable(size int) (*reusable, error) { return &reusable{b: make([]byte, size)}, nil }

func (r *reusable) bytes() []byte { return r.b }

func (r *reusable) release(variant string) error { return nil }

func (r *reusable) close() error { return nil }
