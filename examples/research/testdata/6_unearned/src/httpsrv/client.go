package httpsrv

// Request is a request a client sends.
type Request struct {
	Method, URL string
	// flight counts the attempts in flight.
	flight int
}

// NewRequest returns a client request for method and url. A client that
// disconnects drops its requests in flight; the timeout of the request is
// the client's.
func NewRequest(method, url string) *Request {
	return &Request{Method: method, URL: url}
}

// NewClientRequest returns a request of the client in flight.
func NewClientRequest(url string) *Request {
	r := NewRequest("GET", url)
	r.flight++
	return r
}
