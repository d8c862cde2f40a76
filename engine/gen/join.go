package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// A Span is a piece of a joined file: Len bytes of part Part from offset
// Off, or, where Data is not nil, Data itself.
type Span struct {
	Part     int
	Off, Len int64
	Data     []byte
}

// Size returns the bytes the span holds.
func (s Span) Size() int64 {
	if s.Data != nil {
		return int64(len(s.Data))
	}
	return s.Len
}

// Spans returns the size of the file spans make.
func Spans(spans []Span) int64 {
	var n int64
	for _, s := range spans {
		n += s.Size()
	}
	return n
}

// Join lays out the one Parquet file that joins parts, the files Write
// made of consecutive ranges of one table (Options.From, To), in order:
// the row groups of every part where they lie in it, then the parts'
// column indexes, then their offset indexes, whose page offsets it moves,
// then a footer that lists every row group. It reads only the parts'
// footers and offset indexes (a few kilobytes each), so that the parts'
// bytes can stay where they are: WriteSpans writes the file, and a reader
// can read it from the spans. For parts made by Parts the file is byte
// for byte the one Write makes of the whole table.
func Join(parts []io.ReaderAt, sizes []int64) ([]Span, error) {
	if len(parts) == 0 || len(parts) != len(sizes) {
		return nil, fmt.Errorf("gen: join: want parts and their sizes, got %d and %d", len(parts), len(sizes))
	}
	protocol := new(thrift.CompactProtocol)
	var all format.FileMetaData
	spans := []Span{{Part: 0, Off: 0, Len: 4}} // the magic of part 0
	layouts := make([]partLayout, len(parts))
	off := int64(4)
	for k := range parts {
		l, err := readLayout(parts[k], sizes[k])
		if err != nil {
			return nil, fmt.Errorf("gen: join: part %d: %w", k, err)
		}
		if k == 0 {
			all = l.md
			all.RowGroups = nil
			all.NumRows = 0
		} else if !sameSchema(all.Schema, l.md.Schema) {
			return nil, fmt.Errorf("gen: join: part %d has another schema than part 0", k)
		}
		l.rgDelta = off - 4
		spans = append(spans, Span{Part: k, Off: 4, Len: l.rgEnd - 4})
		off += l.rgEnd - 4
		layouts[k] = l
	}
	for k := range layouts {
		l := &layouts[k]
		if n := l.ciEnd - l.ciStart; n > 0 {
			spans = append(spans, Span{Part: k, Off: l.ciStart, Len: n})
			l.ciDelta = off - l.ciStart
			off += n
		}
	}
	for k := range layouts {
		l := &layouts[k]
		if l.oiEnd == l.oiStart {
			continue
		}
		if l.rgDelta == 0 {
			// Nothing moved: the offset indexes stay as they are.
			spans = append(spans, Span{Part: k, Off: l.oiStart, Len: l.oiEnd - l.oiStart})
			for _, c := range l.chunks() {
				if c.OffsetIndexLength > 0 {
					c.OffsetIndexOffset += off - l.oiStart
				}
			}
			off += l.oiEnd - l.oiStart
			continue
		}
		section := make([]byte, l.oiEnd-l.oiStart)
		if _, err := parts[k].ReadAt(section, l.oiStart); err != nil {
			return nil, fmt.Errorf("gen: join: part %d: reading offset indexes: %w", k, err)
		}
		var buf bytes.Buffer
		for _, c := range l.chunks() {
			if c.OffsetIndexLength == 0 {
				continue
			}
			var oi format.OffsetIndex
			b := section[c.OffsetIndexOffset-l.oiStart:][:c.OffsetIndexLength]
			if err := thrift.Unmarshal(protocol, b, &oi); err != nil {
				return nil, fmt.Errorf("gen: join: part %d: offset index: %w", k, err)
			}
			for i := range oi.PageLocations {
				oi.PageLocations[i].Offset += l.rgDelta
			}
			enc, err := thrift.Marshal(protocol, &oi)
			if err != nil {
				return nil, fmt.Errorf("gen: join: encoding an offset index: %w", err)
			}
			c.OffsetIndexOffset = off + int64(buf.Len())
			c.OffsetIndexLength = int32(len(enc))
			buf.Write(enc)
		}
		spans = append(spans, Span{Data: buf.Bytes()})
		off += int64(buf.Len())
	}
	for k := range layouts {
		l := &layouts[k]
		for _, c := range l.chunks() {
			if c.FileOffset != 0 {
				c.FileOffset += l.rgDelta
			}
			md := &c.MetaData
			md.DataPageOffset += l.rgDelta
			if md.DictionaryPageOffset != 0 {
				md.DictionaryPageOffset += l.rgDelta
			}
			if md.IndexPageOffset != 0 {
				md.IndexPageOffset += l.rgDelta
			}
			if c.ColumnIndexLength > 0 {
				c.ColumnIndexOffset += l.ciDelta
			}
		}
		for i := range l.md.RowGroups {
			rg := l.md.RowGroups[i]
			if rg.FileOffset != 0 {
				rg.FileOffset += l.rgDelta
			}
			rg.Ordinal = int16(len(all.RowGroups))
			all.RowGroups = append(all.RowGroups, rg)
			all.NumRows += rg.NumRows
		}
	}
	footer, err := thrift.Marshal(protocol, &all)
	if err != nil {
		return nil, fmt.Errorf("gen: join: encoding the footer: %w", err)
	}
	footer = binary.LittleEndian.AppendUint32(footer, uint32(len(footer)))
	footer = append(footer, "PAR1"...)
	return append(spans, Span{Data: footer}), nil
}

// WriteSpans writes the file that spans over parts make to w.
func WriteSpans(w io.Writer, parts []io.ReaderAt, spans []Span) error {
	for _, s := range spans {
		if s.Data != nil {
			if _, err := w.Write(s.Data); err != nil {
				return fmt.Errorf("gen: join: %w", err)
			}
			continue
		}
		if _, err := io.Copy(w, io.NewSectionReader(parts[s.Part], s.Off, s.Len)); err != nil {
			return fmt.Errorf("gen: join: part %d: %w", s.Part, err)
		}
	}
	return nil
}

// partLayout is where a part's sections lie: its row groups in [4, rgEnd),
// its column indexes in [ciStart, ciEnd), its offset indexes in [oiStart,
// oiEnd), then the footer; and how far Join moves them.
type partLayout struct {
	md                                    format.FileMetaData
	rgEnd, ciStart, ciEnd, oiStart, oiEnd int64
	rgDelta, ciDelta                      int64
}

// chunks returns the part's column chunks, in the order of the row groups
// and their columns, which is the order of the page indexes in the file.
func (l *partLayout) chunks() []*format.ColumnChunk {
	var cs []*format.ColumnChunk
	for i := range l.md.RowGroups {
		for j := range l.md.RowGroups[i].Columns {
			cs = append(cs, &l.md.RowGroups[i].Columns[j])
		}
	}
	return cs
}

// readLayout reads a part's footer and checks that its sections lie as
// Write lays them out: row groups, column indexes, offset indexes, footer,
// each index in the order of its column chunk.
func readLayout(r io.ReaderAt, size int64) (partLayout, error) {
	var l partLayout
	var tail [8]byte
	var head [4]byte
	if size < 12 {
		return l, fmt.Errorf("%d bytes are no Parquet file", size)
	}
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return l, err
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return l, err
	}
	if string(head[:]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return l, errors.New("not a Parquet file (no PAR1 magic)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	footerStart := size - 8 - n
	if footerStart < 4 {
		return l, fmt.Errorf("footer of %d bytes in a file of %d", n, size)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, footerStart); err != nil {
		return l, err
	}
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b, &l.md); err != nil {
		return l, fmt.Errorf("footer: %w", err)
	}
	l.ciStart, l.ciEnd, l.oiStart, l.oiEnd = -1, -1, -1, -1
	var dataEnd int64 = 4
	for _, c := range l.chunks() {
		if c.FilePath != "" || c.MetaData.BloomFilterOffset != 0 || len(c.EncryptedColumnMetadata) > 0 {
			return l, errors.New("column chunks in other files, bloom filters or encryption cannot be joined")
		}
		start := c.MetaData.DataPageOffset
		if d := c.MetaData.DictionaryPageOffset; d != 0 {
			start = min(start, d)
		}
		dataEnd = max(dataEnd, start+c.MetaData.TotalCompressedSize)
		if err := extend(&l.ciStart, &l.ciEnd, c.ColumnIndexOffset, int64(c.ColumnIndexLength)); err != nil {
			return l, fmt.Errorf("column indexes: %w", err)
		}
		if err := extend(&l.oiStart, &l.oiEnd, c.OffsetIndexOffset, int64(c.OffsetIndexLength)); err != nil {
			return l, fmt.Errorf("offset indexes: %w", err)
		}
	}
	// Empty sections lie where the next one starts.
	if l.oiStart < 0 {
		l.oiStart, l.oiEnd = footerStart, footerStart
	}
	if l.ciStart < 0 {
		l.ciStart, l.ciEnd = l.oiStart, l.oiStart
	}
	l.rgEnd = l.ciStart
	if dataEnd != l.rgEnd || l.ciEnd != l.oiStart || l.oiEnd != footerStart {
		return l, fmt.Errorf("unexpected layout: data to %d, column indexes [%d, %d), offset indexes [%d, %d), footer at %d",
			dataEnd, l.ciStart, l.ciEnd, l.oiStart, l.oiEnd, footerStart)
	}
	return l, nil
}

// extend grows the section [*start, *end) by the index at off of n bytes,
// which must follow it directly (the indexes lie in chunk order).
func extend(start, end *int64, off, n int64) error {
	if n == 0 {
		return nil
	}
	if *start < 0 {
		*start, *end = off, off+n
		return nil
	}
	if off != *end {
		return fmt.Errorf("index at %d does not follow the one before, which ends at %d", off, *end)
	}
	*end += n
	return nil
}

// sameSchema reports whether two parts' schemas have the same columns.
func sameSchema(a, b []format.SchemaElement) bool {
	return slices.EqualFunc(a, b, func(x, y format.SchemaElement) bool {
		return x.Name == y.Name && x.Type == y.Type && x.NumChildren == y.NumChildren && x.RepetitionType == y.RepetitionType
	})
}
