package pgcheckpoint_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// proxy forwards TCP connections to the test server. Frozen, it stops
// forwarding in both directions and keeps the connections open, as a
// network that silently stops delivering would; cut, it closes them all.
type proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	thawed   chan struct{} // closed while not frozen
	refusing bool          // new connections are closed at once
	conns    []net.Conn
	done     chan struct{} // closed by close
	wg       sync.WaitGroup
}

// newProxy starts a proxy to the test server; it is closed when t ends.
func newProxy(t testing.TB) *proxy {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{
		ln:     ln,
		target: net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))),
		thawed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	close(p.thawed)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// pool returns a pool connecting through p, closed when t ends (before p).
func (p *proxy) pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := p.ln.Addr().(*net.TCPAddr)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = addr.IP.String(), uint16(addr.Port)
	cfg.ConnConfig.Fallbacks = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.thaw() // so that closing the pool's connections is not held
		pool.Close()
	})
	return pool
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		select {
		case <-p.done:
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		default:
		}
		if p.refusing {
			p.mu.Unlock()
			c.Close()
			s.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(s, c) })
		p.wg.Go(func() { p.pipe(c, s) })
	}
}

// pipe copies src to dst while p is not frozen; when either ends, it closes
// both (once thawed).
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed := p.thawed
			p.mu.Unlock()
			select {
			case <-thawed:
			case <-p.done:
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			// A network that stops delivering does not deliver a
			// connection's end either: frozen, p holds the other side
			// open until thawed.
			p.mu.Lock()
			thawed := p.thawed
			p.mu.Unlock()
			select {
			case <-thawed:
			case <-p.done:
			}
			return
		}
	}
}

// freeze makes p stop forwarding, the connections staying open.
func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default:
	}
}

// thaw makes p forward again.
func (p *proxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

// refuse makes p close new connections at once (refusing) or forward them
// again.
func (p *proxy) refuse(refusing bool) {
	p.mu.Lock()
	p.refusing = refusing
	p.mu.Unlock()
}

// cut closes every connection p forwards (new ones are forwarded).
func (p *proxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	close(p.done)
	p.mu.Unlock()
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}
