package lockfile

// Every change to a lock file goes through a journal file,
// .NAME.lock.pending, written and hard-linked into place: link(2) fails if
// the lock file exists, so a new lock never clobbers another, and a
// replacement goes link-to-.swap then rename(2), so readers see the old
// file or the new one, never a mix. The caller fsyncs the journal (Sync)
// while its own record of the change commits, and removes the journal
// only after both; a journal found later is the trace of a process that
// died or lost power in between. A lock file that shares the journal's
// inode is that process's.

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"
)

// journalName and swapName name the hidden helper files beside file.
func journalName(file string) string { return "." + file + ".pending" }
func swapName(file string) string    { return "." + file + ".swap" }

// writeJournal writes data to a new journal of file and returns it open,
// for the caller to fsync and close.
func (d at) writeJournal(file string, data []byte) (*os.File, error) {
	jn := journalName(file)
	if err := d.unlink(jn); err != nil {
		return nil, err
	}
	fd, err := d.create(jn, unix.O_WRONLY|unix.O_EXCL)
	if err != nil {
		return nil, d.openErr("create", jn, err)
	}
	j := os.NewFile(uintptr(fd), d.join(jn))
	if _, err := j.Write(data); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// place puts a new file in place without clobbering an existing one
// (ErrExists). It returns the journal, open.
func (d at) place(file string, data []byte) (*os.File, error) {
	j, err := d.writeJournal(file, data)
	if err != nil {
		return nil, err
	}
	if err := unix.Linkat(d.fd, journalName(file), d.fd, file, 0); err != nil {
		j.Close()
		_ = d.unlink(journalName(file))
		if err == unix.EEXIST {
			return nil, ErrExists
		}
		return nil, &os.LinkError{Op: "link", Old: j.Name(), New: d.join(file), Err: err}
	}
	return j, nil
}

// replace atomically swaps file's content for data. It returns the
// journal, open.
func (d at) replace(file string, data []byte) (*os.File, error) {
	j, err := d.writeJournal(file, data)
	if err != nil {
		return nil, err
	}
	sw := swapName(file)
	if err = d.unlink(sw); err == nil {
		if lerr := unix.Linkat(d.fd, journalName(file), d.fd, sw, 0); lerr != nil {
			err = &os.LinkError{Op: "link", Old: j.Name(), New: d.join(sw), Err: lerr}
		} else if rerr := unix.Renameat(d.fd, sw, d.fd, file); rerr != nil {
			err = &os.LinkError{Op: "rename", Old: d.join(sw), New: d.join(file), Err: rerr}
		}
	}
	if err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// remove deletes file if it still holds exactly data: another tool's file
// in its place is left alone.
func (d at) remove(file string, data []byte) error {
	cur, err := d.read(file)
	if err != nil || !cur.Exists || !bytes.Equal(cur.Data, data) {
		return err
	}
	return d.unlink(file)
}

// SyncDir fsyncs a directory, so that a file created in it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return SyncClose(d)
}

// SyncClose makes a journal durable and closes it.
func SyncClose(j *os.File) error {
	err := j.Sync()
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	return err
}
