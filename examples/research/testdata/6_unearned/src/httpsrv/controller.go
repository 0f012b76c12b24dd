package httpsrv

import "time"

// Controller controls the response to one request: its read and write
// deadlines, which bound the read timeout and the write timeout of this
// request only.
type Controller struct {
	conn *Conn
}

// SetReadDeadline sets the deadline for reading the request: the read
// timeout of this request, which Server.ReadTimeout and Server.WriteTimeout
// do not change.
func (c *Controller) SetReadDeadline(deadline time.Time) error {
	return c.conn.setDeadline(deadline, true)
}

// SetWriteDeadline sets the deadline for writing the response: the write
// timeout of this response, whatever ReadTimeout and WriteTimeout say.
func (c *Controller) SetWriteDeadline(deadline time.Time) error {
	return c.conn.setDeadline(deadline, false)
}
