package web

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Rate is a token bucket's shape: Burst events at once, then one every
// Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// limiter is a set of token buckets of one Rate, by key (an address, or
// "" for one bucket shared by everyone). Its clock is injected so that
// tests step it instead of sleeping.
type limiter struct {
	rate Rate
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets bounds the keys a limiter remembers; past it, the buckets
// that have refilled (which say nothing a new bucket would not) are
// forgotten.
const maxBuckets = 10000

func newLimiter(r Rate, now func() time.Time) *limiter {
	if r.Burst < 1 {
		r.Burst = 1
	}
	if r.Every <= 0 {
		r.Every = time.Second
	}
	return &limiter{rate: r, now: now, buckets: map[string]*bucket{}}
}

// refill returns key's bucket brought up to now; l.mu held.
func (l *limiter) refill(key string, now time.Time) *bucket {
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: float64(l.rate.Burst), at: now}
		l.buckets[key] = b
		return b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(l.rate.Burst), b.tokens+float64(d)/float64(l.rate.Every))
		b.at = now
	}
	return b
}

// prune forgets the full buckets; l.mu held.
func (l *limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(l.rate.Every) >= float64(l.rate.Burst) {
			delete(l.buckets, k)
		}
	}
}

// wait returns how long key must wait for a token (0: one is there). It
// takes nothing.
func (l *limiter) wait(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, l.now())
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.rate.Every))
}

// take takes a token from key's bucket when there is one, and otherwise
// returns how long to wait for it.
func (l *limiter) take(key string) (ok bool, retry time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, l.now())
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * float64(l.rate.Every))
}

// spend takes a token from key's bucket, going into debt when there is
// none (a wrong join code counts even when the bucket is already empty).
func (l *limiter) spend(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, l.now())
	b.tokens = max(b.tokens-1, -float64(l.rate.Burst))
}

// addrKey is the rate-limit key of a request's address: its IP, or, for
// IPv6, its /64 (one host commonly has a whole /64).
func addrKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
