package stream

import (
	"bytes"
	"io"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/replay"
)

// jsonlWriter writes export's lines (see replay.WriteExportLine), each
// event's with its leaf hash added:
//
//	{"seq":N,"prev_hash":"<hex>","hash":"<hex>","body":{...},"leaf":"<base64>"}
//	{"checkpoint":"<signed note>"}
//
// and, first, for a stream after seq N, the tree line, so that verify
// --file checks the checkpoints of a stream that starts there.
type jsonlWriter struct{ lineWriter }

func (j *jsonlWriter) Start(size int64, frontier []tlog.Hash) error {
	if size == 0 {
		return nil
	}
	return j.line(func(b *bytes.Buffer) error { return replay.WriteTreeLine(b, size, frontier) })
}

func (j *jsonlWriter) Event(r *Record) error {
	return j.line(func(b *bytes.Buffer) error {
		if err := replay.WriteExportLine(b, r.Row); err != nil {
			return err
		}
		b.Truncate(b.Len() - len("}\n"))
		b.WriteString(`,"leaf":"` + r.Leaf.String() + "\"}\n")
		return nil
	})
}

func (j *jsonlWriter) Checkpoint(c *Checkpoint) error {
	return j.line(func(b *bytes.Buffer) error { return replay.WriteCheckpointLine(b, c.Note) })
}

// line writes what write puts in the emptied buffer, in one write.
func (j *jsonlWriter) line(write func(*bytes.Buffer) error) error {
	j.buf.Reset()
	if err := write(&j.buf); err != nil {
		return err
	}
	return j.flush()
}

// lineWriter is a writer's buffer, written to w in one write.
type lineWriter struct {
	w   io.Writer
	buf bytes.Buffer
}

func (l *lineWriter) flush() error {
	_, err := l.w.Write(l.buf.Bytes())
	return err
}
