package httpsrv

import (
	"net"
	"time"
)

// Server serves requests on its connections, each read and written within
// the server's timeouts.
type Server struct {
	Addr     string
	timeouts [2]time.Duration
}

// Conn is a served connection.
type Conn struct {
	nc net.Conn
}

// ListenAndServe listens on the server's address and serves each
// connection, reading requests and writing responses with the read and
// write timeouts of the server.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	for {
		nc, err := ln.Accept()
		if err != nil {
			return err
		}
		go s.serve(&Conn{nc: nc})
	}
}

func (s *Server) serve(c *Conn) {
	c.nc.Close()
}

func (c *Conn) setDeadline(t time.Time, read bool) error {
	if read {
		return c.nc.SetReadDeadline(t)
	}
	return c.nc.SetWriteDeadline(t)
}
