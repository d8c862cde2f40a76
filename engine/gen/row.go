package gen

import (
	"math/rand/v2"
	"strconv"
)

// Hit is one row of the generated table. Field types follow ClickBench's
// hits.parquet: SMALLINT columns are int16 (INT32 annotated INT(16,signed)),
// EventDate is uint16 days since 1970 (INT32 annotated INT(16,unsigned)),
// EventTime int64 epoch seconds, strings []byte (BYTE_ARRAY, no annotation).
type Hit struct {
	WatchID            int64  `parquet:"WatchID"`
	Title              []byte `parquet:"Title,plain"`
	EventTime          int64  `parquet:"EventTime"`
	EventDate          uint16 `parquet:"EventDate"`
	CounterID          int32  `parquet:"CounterID"`
	ClientIP           int32  `parquet:"ClientIP"`
	RegionID           int32  `parquet:"RegionID"`
	UserID             int64  `parquet:"UserID"`
	URL                []byte `parquet:"URL,plain"`
	Referer            []byte `parquet:"Referer,plain"`
	IsRefresh          int16  `parquet:"IsRefresh"`
	ResolutionWidth    int16  `parquet:"ResolutionWidth"`
	MobilePhone        int16  `parquet:"MobilePhone"`
	MobilePhoneModel   []byte `parquet:"MobilePhoneModel,dict"`
	TraficSourceID     int16  `parquet:"TraficSourceID"`
	SearchEngineID     int16  `parquet:"SearchEngineID"`
	SearchPhrase       []byte `parquet:"SearchPhrase,plain"`
	AdvEngineID        int16  `parquet:"AdvEngineID"`
	WindowClientWidth  int16  `parquet:"WindowClientWidth"`
	WindowClientHeight int16  `parquet:"WindowClientHeight"`
	IsLink             int16  `parquet:"IsLink"`
	IsDownload         int16  `parquet:"IsDownload"`
	DontCountHits      int16  `parquet:"DontCountHits"`
	RefererHash        int64  `parquet:"RefererHash"`
	URLHash            int64  `parquet:"URLHash"`
}

// rowGen materialises rows; one per goroutine (it owns its RNG and arena).
type rowGen struct {
	m     *model
	src   rand.PCG
	r     *rand.Rand
	usrc  rand.PCG
	ur    *rand.Rand
	arena []byte
	phr   []byte
}

func newRowGen(m *model) *rowGen {
	g := &rowGen{m: m}
	g.r = rand.New(&g.src)
	g.ur = rand.New(&g.usrc)
	return g
}

// seedRow positions the row RNG on row number i (its generation number,
// independent of where the row ends up in the file).
func (g *rowGen) seedRow(i int) { g.src.Seed(g.m.seed^0x726f7773, uint64(i)) }

// user returns the attributes of user u, from the model's cache if it
// has one.
func (g *rowGen) user(u int) user {
	if c := g.m.userCache; c != nil {
		return c[u]
	}
	return g.m.user(u, g.ur, &g.usrc)
}

// key returns the clustered-order key of row i of user u.
func (g *rowGen) key(i, u int) (key, user) {
	us := g.user(u)
	g.seedRow(i)
	return g.m.rowKey(g.r, &us), us
}

// appendStr appends s to the arena and returns it as a capacity-limited slice.
func (g *rowGen) str(b []byte) []byte {
	n := len(g.arena)
	g.arena = append(g.arena, b...)
	return g.arena[n:len(g.arena):len(g.arena)]
}

// fill generates row i of user u into h; strings point into the arena,
// which the caller resets between chunks.
func (g *rowGen) fill(h *Hit, i, u int) {
	m, r := g.m, g.r
	k, us := g.key(i, u)

	h.WatchID = int64(r.Uint64())
	h.UserID = us.id
	h.CounterID = m.counterID[k.counter]
	h.EventDate = uint16(FirstDay + k.day)
	h.EventTime = int64(FirstDay+k.day)*86400 + int64(k.sec)
	h.RegionID = us.region
	if r.Float64() < homeIPP {
		h.ClientIP = us.ip
	} else {
		h.ClientIP = int32(r.Uint32())
	}
	res := resolutions[us.res]
	h.ResolutionWidth = res.w
	if res.w > 0 {
		h.WindowClientWidth = res.w - int16(r.IntN(int(res.w)/3+1))
		h.WindowClientHeight = res.h - int16(r.IntN(int(res.h)/2+1))
	} else {
		h.WindowClientWidth, h.WindowClientHeight = 0, 0
	}
	if us.phoneModel >= 0 {
		h.MobilePhone = us.phoneModel + 1
		h.MobilePhoneModel = []byte(phoneModels[us.phoneModel])
	} else {
		h.MobilePhone = 0
		h.MobilePhoneModel = nil
	}
	h.IsRefresh = bool16(r.Float64() < isRefreshP)
	h.IsLink = bool16(r.Float64() < isLinkP)
	h.IsDownload = bool16(r.Float64() < isDownloadP)
	h.DontCountHits = bool16(r.Float64() < dontCountP)
	h.AdvEngineID = 0
	if r.Float64() < advP {
		h.AdvEngineID = advEngines[m.adv.sample(r.Float64())].id
	}

	// Search phrase.
	g.phr = g.phr[:0]
	search := r.Float64() < searchP
	se := 0
	if search {
		if r.Float64() < freshPhraseP {
			g.phr = appendPhrase(g.phr, uint64(i), false)
		} else {
			g.phr = appendPhrase(g.phr, uint64(m.phrases.sample(r.Float64())), true)
		}
		se = m.search.sample(r.Float64())
		h.SearchEngineID = searchEngines[se].id
		h.SearchPhrase = g.str(g.phr)
	} else {
		h.SearchEngineID = 0
		h.SearchPhrase = nil
	}

	// URL and Title.
	dom := m.domain(k.counter)
	start := len(g.arena)
	var page uint64
	home, google := false, false
	switch f := r.Float64(); {
	case f < emptyURLP:
	case f < emptyURLP+googleURLP:
		google = true
		g.arena = append(g.arena, "http://www.google.ru/search?q="...)
		if !search {
			g.phr = appendPhrase(g.phr[:0], uint64(m.phrases.sample(r.Float64())), true)
		}
		g.arena = append(g.arena, g.phr...)
	case f < emptyURLP+googleURLP+homePageP:
		home = true
		g.arena = append(g.arena, "http://"...)
		g.arena = append(g.arena, dom...)
		g.arena = append(g.arena, '/')
	default:
		page = uint64(m.pages.sample(r.Float64()))
		g.arena = append(g.arena, "http://"...)
		g.arena = append(g.arena, dom...)
		g.arena = append(g.arena, '/')
		g.arena = appendWords(g.arena, mix64(page^uint64(k.counter)<<20), 2, '/')
		if page > 64 {
			g.arena = append(g.arena, "?id="...)
			g.arena = strconv.AppendUint(g.arena, page, 10)
		}
	}
	h.URL = g.arena[start:len(g.arena):len(g.arena)]
	h.URLHash = m.hashString(h.URL)

	start = len(g.arena)
	switch {
	case len(h.URL) == 0 || r.Float64() < emptyTitleP:
	case search && r.Float64() < googleTitleP:
		g.arena = append(g.arena, g.phr...)
		g.arena = append(g.arena, " - Google Maps"...)
	case google:
		g.arena = append(g.arena, g.phr...)
		g.arena = append(g.arena, " - Google Search"...)
	default:
		g.arena = appendWords(g.arena, mix64(uint64(k.counter)), 2, ' ')
		if !home {
			g.arena = append(g.arena, " - "...)
			g.arena = appendWords(g.arena, mix64(page+uint64(k.counter)), 3, ' ')
		}
	}
	h.Title = g.arena[start:len(g.arena):len(g.arena)]

	// Referer and the traffic source.
	start = len(g.arena)
	h.TraficSourceID = 0
	switch {
	case search:
		g.arena = append(g.arena, searchEngines[se].prefix...)
		g.arena = append(g.arena, g.phr...)
		h.TraficSourceID = 2
	case k.counter == 0 && r.Float64() < specialRefP:
		g.arena = append(g.arena, m.specRef...)
		h.TraficSourceID = -1
		if r.IntN(2) == 0 {
			h.TraficSourceID = 6
		}
	case r.Float64() < emptyRefererP:
		h.TraficSourceID = 1
	default:
		d := m.refDoms.sample(r.Float64())
		if d&3 == 0 {
			g.arena = append(g.arena, "http://"...)
		} else {
			g.arena = append(g.arena, "https://www."...)
		}
		g.arena = appendWords(g.arena, mix64(uint64(d)+77), 2, '-')
		g.arena = append(g.arena, '.')
		g.arena = append(g.arena, tlds[d%len(tlds)]...)
		g.arena = append(g.arena, '/')
		g.arena = appendWords(g.arena, mix64(uint64(d)<<24|uint64(r.IntN(4096))), 2, '/')
		switch x := r.IntN(10); {
		case x < 5:
			h.TraficSourceID = 0
		case x < 8:
			h.TraficSourceID = -1
		default:
			h.TraficSourceID = int16(4 + r.IntN(7)) // 4..10, 6 included
		}
	}
	if h.AdvEngineID != 0 {
		h.TraficSourceID = 3
	}
	h.Referer = g.arena[start:len(g.arena):len(g.arena)]
	h.RefererHash = m.hashString(h.Referer)
}

func bool16(b bool) int16 {
	if b {
		return 1
	}
	return 0
}
