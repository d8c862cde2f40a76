// Package freshmem maps fresh anonymous memory outside the Go heap: pages
// the kernel zeroes one at a time as they are first touched, where a large
// Go allocation may reuse freed heap memory and clear all of it at once
// before it returns. The zeroing experiment measures that difference, and
// the bandwidth cell relies on it to stay interruptible while it sets up.
package freshmem
