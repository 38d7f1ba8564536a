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
type jsonlWriter struct {
	w   io.Writer
	buf bytes.Buffer
}

func (j *jsonlWriter) Start(size int64, frontier []tlog.Hash) error {
	if size == 0 {
		return nil
	}
	j.buf.Reset()
	if err := replay.WriteTreeLine(&j.buf, size, frontier); err != nil {
		return err
	}
	return j.flush()
}

func (j *jsonlWriter) Event(r *Record) error {
	j.buf.Reset()
	if err := replay.WriteExportLine(&j.buf, r.Row); err != nil {
		return err
	}
	b := j.buf.Bytes()
	j.buf.Truncate(len(b) - len("}\n"))
	j.buf.WriteString(`,"leaf":"`)
	j.buf.WriteString(r.Leaf.String())
	j.buf.WriteString("\"}\n")
	return j.flush()
}

func (j *jsonlWriter) Checkpoint(c *Checkpoint) error {
	j.buf.Reset()
	if err := replay.WriteCheckpointLine(&j.buf, c.Note); err != nil {
		return err
	}
	return j.flush()
}

func (j *jsonlWriter) flush() error {
	_, err := j.w.Write(j.buf.Bytes())
	return err
}
