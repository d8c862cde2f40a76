package gen

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Constants the ClickBench queries filter on. They must occur in the data.
const (
	// HomeCounterID is the CounterID of Q36–Q42 (the most frequent counter).
	HomeCounterID = 62
	// TopURLHash is the URLHash of Q41; it is the hash of the most frequent URL.
	TopURLHash int64 = 2868770270353813622
	// SpecialRefererHash is the RefererHash of Q40; it is the hash of the
	// internal referer of counter 62.
	SpecialRefererHash int64 = 3594120000172545465
	// SpecialUserID is the UserID of Q19; one user carries it.
	SpecialUserID int64 = 435090932899640449

	// FirstDay and Days: EventDate spans 2013-07-02 … 2013-07-31, as the real
	// data (days since 1970-01-01).
	FirstDay = 15888
	Days     = 30

	// UserRowsRatio is the mean number of rows per UserID in the real data
	// (99,997,497 rows / 17,630,976 users).
	UserRowsRatio = 99997497.0 / 17630976.0

	numCounters   = 4096
	numRegions    = 8000
	numRefDomains = 5000
	pagesPerSite  = 1 << 20
)

// Tunable shares (fractions of all rows unless stated otherwise).
const (
	userZipfS      = 0.53  // power-law exponent of the extra rows per user rank
	shareCounter62 = 0.08  // rows on CounterID 62
	shareCounter2  = 0.04  // rows on the second counter
	homeCounterP   = 0.85  // a row is on its user's home counter
	homeDayP       = 0.6   // a row is on its user's home day
	region229P     = 0.18  // users (≈ rows) in RegionID 229
	searchP        = 0.15  // rows with a non-empty SearchPhrase (85% empty)
	freshPhraseP   = 0.36  // of non-empty phrases: a phrase used once
	popularPhrases = 0.006 // pool of repeated phrases, per row of the table
	homePageP      = 0.40  // a row's URL is its site's home page
	emptyURLP      = 0.01
	googleURLP     = 0.006
	emptyTitleP    = 0.04
	googleTitleP   = 0.02 // of rows with a search phrase: a Title mentioning Google
	emptyRefererP  = 0.35
	specialRefP    = 0.30 // of counter-62 rows: the internal referer of Q40
	advP           = 630500.0 / 99997497.0
	isRefreshP     = 0.09
	isLinkP        = 0.03
	isDownloadP    = 0.003
	dontCountP     = 0.04
	mobileUserP    = 0.08
	homeIPP        = 0.9
)

// advEngines are the 18 non-zero AdvEngineID values and their weights. Only
// the top value's share (2: 404,602 of 630,500 non-zero rows) comes from the
// real data; the rest of the list is our choice of a decaying tail.
var advEngines = []struct {
	id int16
	w  float64
}{
	{2, 404602}, {27, 113000}, {13, 45600}, {45, 39000}, {44, 9700}, {3, 7300},
	{52, 3550}, {50, 3450}, {28, 2900}, {41, 2400}, {12, 1800}, {40, 1670},
	{51, 1440}, {4, 930}, {48, 890}, {49, 370}, {53, 170}, {32, 90},
}

var searchEngines = []struct {
	id int16
	w  float64
	// the search URL prefix used as Referer
	prefix string
}{
	{2, 55, "https://www.yandex.ru/yandsearch?text="},
	{3, 30, "https://www.google.ru/search?q="},
	{1, 6, "http://go.mail.ru/search?q="},
	{4, 4, "http://nova.rambler.ru/search?query="},
	{5, 3, "https://www.bing.com/search?q="},
	{8, 2, "http://search.qip.ru/search?query="},
}

var resolutions = []struct {
	w, h int16
	p    float64
}{
	{1920, 1080, 22}, {1366, 768, 18}, {1280, 1024, 11}, {1024, 768, 8},
	{1600, 900, 7}, {1440, 900, 6}, {1680, 1050, 6}, {1536, 864, 4},
	{1280, 800, 5}, {2560, 1440, 3}, {1360, 768, 3}, {360, 640, 4}, {768, 1024, 2},
	{0, 0, 1},
}

var phoneModels = []string{
	"iPad", "iPhone", "GT-I9300", "GT-I9100", "GT-N7100", "Lumia 920", "HTC One",
	"Nexus 4", "Nexus 7", "GT-S5830", "GT-I8190", "LT26i", "C6603", "GT-P5100",
	"MB860", "U8950", "ME173X", "A820", "MT27i", "S720", "ST25i", "GT-S7562",
	"HTC Desire", "XT910", "K900", "S4", "W8510", "Galaxy Tab", "SM-T210",
	"GT-N8000", "Kindle Fire", "A1000",
}

// syllables build pseudo-words: word(i) for i < 1024 is two syllables.
var syllables = [32]string{
	"ka", "ro", "mi", "ne", "to", "la", "su", "vi", "da", "po", "re", "ki", "no", "sa",
	"te", "mo", "li", "ga", "zo", "bu", "ve", "ny", "sho", "che", "ze", "ri", "ta", "lo",
	"me", "du", "fa", "ko",
}

var tlds = [...]string{"ru", "com", "net", "org", "ua", "by", "kz", "su"}

func appendWord(b []byte, i uint64) []byte {
	b = append(b, syllables[(i>>5)&31]...)
	return append(b, syllables[i&31]...)
}

// appendWords appends n space-separated words chosen by the bits of x.
func appendWords(b []byte, x uint64, n int, sep byte) []byte {
	for j := 0; j < n; j++ {
		if j > 0 {
			b = append(b, sep)
		}
		b = appendWord(b, x)
		x >>= 10
	}
	return b
}

// mix64 is the splitmix64 finaliser: a bijection on uint64.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// powerLaw samples ranks in [0, n) with density ∝ (x+v)^-s by inverting
// the continuous CDF: one math.Pow per sample.
type powerLaw struct {
	a, b, v, inv float64
	n            int
}

func newPowerLaw(n int, s, v float64) powerLaw {
	e := 1 - s
	return powerLaw{a: math.Pow(v, e), b: math.Pow(float64(n)+v, e), v: v, inv: 1 / e, n: n}
}

func (p *powerLaw) sample(u float64) int {
	x := math.Pow(u*(p.b-p.a)+p.a, p.inv) - p.v
	k := int(x)
	if k >= p.n {
		k = p.n - 1
	}
	if k < 0 {
		k = 0
	}
	return k
}

// cdfTable samples from a small discrete distribution.
type cdfTable []float64

func newCDF(w []float64) cdfTable {
	c := make(cdfTable, len(w))
	var sum float64
	for i, x := range w {
		sum += x
		c[i] = sum
	}
	for i := range c {
		c[i] /= sum
	}
	return c
}

func (c cdfTable) sample(u float64) int {
	i, _ := slices.BinarySearch(c, u)
	if i >= len(c) {
		i = len(c) - 1
	}
	return i
}

// model holds the precomputed tables of one generation run.
type model struct {
	seed      uint64
	rows      int
	users     int
	userLaw   powerLaw
	counters  cdfTable
	counterID []int32  // by counter rank
	counterSo []uint16 // rank -> position in CounterID order
	regions   powerLaw
	regionID  []int32
	refDoms   powerLaw
	pages     powerLaw
	phrases   powerLaw
	nPopular  int
	adv       cdfTable
	search    cdfTable
	res       cdfTable
	phones    powerLaw
	specialU  int
	topURL    string
	specRef   string
	domains   []string // site of each counter rank
	userCache []user   // every user's attributes (cacheUsers), or nil
}

func newModel(o Options) *model {
	m := &model{seed: uint64(o.Seed), rows: o.Rows, users: o.Users}
	m.userLaw = newPowerLaw(m.users, userZipfS, 0)

	w := make([]float64, numCounters)
	w[0], w[1] = shareCounter62, shareCounter2
	var tail float64
	for r := 2; r < numCounters; r++ {
		w[r] = math.Pow(float64(r), -0.8)
		tail += w[r]
	}
	for r := 2; r < numCounters; r++ {
		w[r] *= (1 - shareCounter62 - shareCounter2) / tail
	}
	m.counters = newCDF(w)
	m.counterID = make([]int32, numCounters)
	used := map[int32]bool{HomeCounterID: true}
	m.counterID[0] = HomeCounterID
	for r := 1; r < numCounters; r++ {
		id := int32(100 + (uint64(r)*7919)%200000)
		for used[id] {
			id++
		}
		used[id] = true
		m.counterID[r] = id
	}
	order := make([]int, numCounters)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(m.counterID[a] - m.counterID[b]) })
	m.counterSo = make([]uint16, numCounters)
	for pos, r := range order {
		m.counterSo[r] = uint16(pos)
	}

	m.regions = newPowerLaw(numRegions, 1.1, 1)
	m.regionID = make([]int32, numRegions)
	for r := range m.regionID {
		id := int32(1 + (uint64(r)*7919)%10000)
		if id == 229 {
			id = 10001
		}
		m.regionID[r] = id
	}
	m.refDoms = newPowerLaw(numRefDomains, 1.05, 1)
	m.pages = newPowerLaw(pagesPerSite, 1.05, 1)
	m.nPopular = min(1<<20, max(16, int(float64(o.Rows)*popularPhrases)))
	m.phrases = newPowerLaw(m.nPopular, 0.75, 1)
	aw := make([]float64, len(advEngines))
	for i, a := range advEngines {
		aw[i] = a.w
	}
	m.adv = newCDF(aw)
	sw := make([]float64, len(searchEngines))
	for i, s := range searchEngines {
		sw[i] = s.w
	}
	m.search = newCDF(sw)
	rw := make([]float64, len(resolutions))
	for i, r := range resolutions {
		rw[i] = r.p
	}
	m.res = newCDF(rw)
	m.phones = newPowerLaw(len(phoneModels), 1.2, 1)
	m.specialU = m.users / 3
	m.domains = make([]string, numCounters)
	for r := range m.domains {
		m.domains[r] = domainName(r)
	}
	m.topURL = "http://" + m.domain(0) + "/"
	m.specRef = "http://" + m.domain(0) + "/search?lr=213"
	return m
}

// domain is the site of counter rank r.
func (m *model) domain(r int) string { return m.domains[r] }

func domainName(r int) string {
	b := appendWords(nil, mix64(uint64(r)+0x5eed), 2, '-')
	if r == 0 {
		b = append(b[:0], "kinomir"...)
	}
	b = append(b, '.')
	b = append(b, tlds[r%len(tlds)]...)
	return string(b)
}

// user holds the attributes shared by all rows of one user.
type user struct {
	id         int64
	counter    int32 // home counter rank
	region     int32
	ip         int32
	phoneModel int16 // -1: none
	day        uint8
	res        uint8
}

// maxCachedUsers bounds the users whose attributes cacheUsers keeps
// (24 bytes each: 96 MiB at most).
const maxCachedUsers = 1 << 22

// cacheUsers computes every user's attributes once, in parallel, for the
// rows to look up instead of computing their user's each time: about 5.67
// times per user, under a tenth of the time of a generation.
func (m *model) cacheUsers() {
	if m.users > maxCachedUsers {
		return
	}
	c := make([]user, m.users)
	parallel(m.users, func(g *rowGen, lo, hi int) {
		for u := lo; u < hi; u++ {
			c[u] = m.user(u, g.ur, &g.usrc)
		}
	}, m)
	m.userCache = c
}

func (m *model) user(u int, r *rand.Rand, src *rand.PCG) user {
	src.Seed(m.seed^0x75736572, uint64(u))
	var x user
	x.id = int64(mix64(uint64(u) ^ m.seed*0x9e3779b97f4a7c15))
	if u == m.specialU {
		x.id = SpecialUserID
	}
	x.counter = int32(m.counters.sample(r.Float64()))
	x.day = uint8(r.IntN(Days))
	if r.Float64() < region229P {
		x.region = 229
	} else {
		x.region = m.regionID[m.regions.sample(r.Float64())]
	}
	x.ip = int32(r.Uint32())
	x.res = uint8(m.res.sample(r.Float64()))
	if resolutions[x.res].w < 800 || r.Float64() < mobileUserP/2 {
		x.phoneModel = int16(m.phones.sample(r.Float64()))
	} else {
		x.phoneModel = -1
	}
	return x
}

// key is the part of a row that decides its position in clustered order.
type key struct {
	counter int // rank
	day     int
	sec     int
}

// rowKey draws the key of a row; it must be the first use of the row's RNG.
func (m *model) rowKey(r *rand.Rand, us *user) key {
	var k key
	if r.Float64() < homeCounterP {
		k.counter = int(us.counter)
	} else {
		k.counter = m.counters.sample(r.Float64())
	}
	if r.Float64() < homeDayP {
		k.day = int(us.day)
	} else {
		k.day = r.IntN(Days)
	}
	// A daily cycle: more traffic in the day than at night.
	f := r.Float64()
	k.sec = int(86400 * (f + 0.12*math.Sin(2*math.Pi*f)))
	k.sec = min(max(k.sec, 0), 86399)
	return k
}

// hashString is the 64-bit hash used for URLHash and RefererHash (FNV-1a),
// except that the two strings the ClickBench queries look for hash to the
// constants of those queries.
func (m *model) hashString(s []byte) int64 {
	if len(s) == len(m.topURL) && string(s) == m.topURL {
		return TopURLHash
	}
	if len(s) == len(m.specRef) && string(s) == m.specRef {
		return SpecialRefererHash
	}
	h := uint64(14695981039346656037)
	for _, c := range s {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return int64(h)
}

// appendPhrase appends search phrase number p. Fresh phrases (used by one
// row; p is the row number, below 1<<30) have three words, popular ones (p is
// the pool rank, below 1<<20) two, so the two kinds never collide; an odd
// multiplier is a bijection modulo a power of two, so distinct numbers give
// distinct phrases.
func appendPhrase(b []byte, p uint64, popular bool) []byte {
	if popular {
		return appendWords(b, (p*0x9E3779B1)&(1<<20-1), 2, ' ')
	}
	return appendWords(b, (p*0x2545F491)&(1<<30-1), 3, ' ')
}
