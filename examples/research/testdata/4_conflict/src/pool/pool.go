// Package pool hands out handles up to a limit of open handles.
package pool

import "errors"

// Pool hands out handles; the pool limits the open handles to
// maxOpenHandles.
type Pool struct {
	open int // handles open now
}

// errLimit is the error of a pool asked for a handle over the limit of
// open handles.
var errLimit = errors.New("pool: too many open handles")

// Open returns a new handle of the pool, or errLimit when the pool already
// has maxOpenHandles open handles: the pool refuses a handle over the limit.
func (p *Pool) Open() (int, error) {
	if p.open >= maxOpenHandles {
		return 0, errLimit
	}
	p.open++
	return p.open, nil
}

// Close gives a handle back to the pool, under the limit of open handles.
func (p *Pool) Close() { p.open-- }

func cycle(p *Pool) {
	if _, err := p.Open(); err == nil {
		p.Close()
	}
}

var _ = cycle
