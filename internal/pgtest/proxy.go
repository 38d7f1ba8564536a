package pgtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
)

type proxyMode int

const (
	flowing proxyMode = iota
	cut               // connections reset, new ones refused
	hung              // connections kept, bytes held back
)

// Proxy is a TCP proxy in front of a server, for tests that take the
// network away from a client: Cut drops every connection and refuses new
// ones, Hang keeps them open but stops moving bytes (a partition where
// packets vanish), Restore brings back normal service. Its goroutines are
// all joined when the test that made it ends.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	mode   proxyMode
	closed bool
	// loseReply: the next message from a client that holds these bytes
	// reaches the server, and its client is reset (LoseReplyTo).
	loseReply []byte
	lost      int           // how many messages LoseReplyTo took the reply of
	refused   int           // how many new connections Cut refused
	cutAfter  bool          // LoseReplyTo's then: cut once the message is sent
	changed   chan struct{} // closed and replaced whenever mode or closed changes
	links     map[*link]struct{}
}

// link is one client connection and its connection to the target.
type link struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{} // closed by close
}

// NewProxy listens on a free 127.0.0.1 port and forwards each connection
// to target (host:port).
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, ln: ln, changed: make(chan struct{}), links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port, to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns a URL reaching database name through the proxy.
func (p *Proxy) URL(name string) string { return URLAt(p.Addr(), name) }

// Cut resets every open connection and, until Restore, resets each new one
// as soon as it is accepted, so clients fail at once.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.setMode(cut)
	links := p.takeLinks()
	p.mu.Unlock()
	for _, l := range links {
		l.reset()
	}
}

// Hang stops moving bytes in either direction, until Restore (which then
// delivers what was held, as TCP would after a partition heals) or Cut.
// Connections stay open and new ones are accepted, but nothing reaches
// the other side, so clients wait until their own deadlines.
func (p *Proxy) Hang() {
	p.mu.Lock()
	p.setMode(hung)
	p.mu.Unlock()
}

// Restore returns to forwarding: new connections work, and after Hang the
// held connections resume.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.setMode(flowing)
	p.mu.Unlock()
}

// LoseReplyTo makes the next message a client sends that holds msg reach
// the server, and then resets that client's connection before any reply
// can reach it: the server acts on the message (a COMMIT commits), and the
// client cannot know it did. The server's end is closed in order, after
// the message, so the server reads the whole of it first, and the cancel
// request the client then sends (pgx does, on a lost connection, through
// a new one) is dropped, so that the server finishes what it was sent.
// With thenCut the proxy is Cut from that moment for every other
// connection, new and open.
func (p *Proxy) LoseReplyTo(msg []byte, thenCut bool) {
	p.mu.Lock()
	p.loseReply, p.cutAfter = msg, thenCut
	p.mu.Unlock()
}

// RepliesLost counts the messages LoseReplyTo took the reply of.
func (p *Proxy) RepliesLost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// Refused counts the new connections the proxy refused while Cut.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// losesReply reports whether chunk, from a client, is the message whose
// reply is to be lost, and disarms LoseReplyTo if it is.
func (p *Proxy) losesReply(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loseReply == nil || !bytes.Contains(chunk, p.loseReply) {
		return false
	}
	p.loseReply = nil
	p.lost++
	if p.cutAfter {
		p.setMode(cut)
	}
	return true
}

// cancelRequest is the code of PostgreSQL's CancelRequest message.
const cancelRequest = 80877102

// dropsCancel reports whether first, the first bytes a client sent on its
// connection, are a cancel request that LoseReplyTo drops.
func (p *Proxy) dropsCancel(first []byte) bool {
	p.mu.Lock()
	lost := p.lost
	p.mu.Unlock()
	return lost > 0 && len(first) == 16 && binary.BigEndian.Uint32(first[4:8]) == cancelRequest
}

// setMode must be called with p.mu held.
func (p *Proxy) setMode(m proxyMode) {
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
}

// takeLinks empties the link set and returns what it held; p.mu held.
func (p *Proxy) takeLinks() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	clear(p.links)
	return links
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	close(p.changed)
	p.changed = make(chan struct{})
	links := p.takeLinks()
	p.mu.Unlock()
	p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		refuse := p.closed || p.mode == cut
		if refuse {
			p.refused++
		}
		p.mu.Unlock()
		if refuse {
			resetConn(client)
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			resetConn(client)
			continue
		}
		l := &link{client: client, server: server, done: make(chan struct{})}
		p.mu.Lock()
		// Cut or close may have come while dialling; they would not see l.
		if p.closed || p.mode == cut {
			p.mu.Unlock()
			l.reset()
			continue
		}
		p.links[l] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(l, l.client, l.server)
		go p.pipe(l, l.server, l.client)
	}
}

// pipe copies src to dst, holding each chunk while the proxy hangs, until
// either side ends or the link is closed; then it closes the whole link.
func (p *Proxy) pipe(l *link, src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
		l.close()
	}()
	buf := make([]byte, 32<<10)
	for first := src == l.client; ; first = false {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.awaitFlow(l) || first && p.dropsCancel(buf[:n]) {
				return
			}
			lose := src == l.client && p.losesReply(buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if lose {
				resetConn(l.client)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// awaitFlow blocks while the proxy hangs; false means the link is gone.
func (p *Proxy) awaitFlow(l *link) bool {
	for {
		p.mu.Lock()
		mode, closed, changed := p.mode, p.closed, p.changed
		p.mu.Unlock()
		switch {
		case closed || mode == cut:
			return false
		case mode == flowing:
			return true
		}
		select {
		case <-changed:
		case <-l.done:
			return false
		}
	}
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.server.Close()
	})
}

// reset closes the link with TCP resets, so both ends see an error rather
// than an orderly end of stream.
func (l *link) reset() {
	l.once.Do(func() {
		close(l.done)
		resetConn(l.client)
		resetConn(l.server)
	})
}

func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
