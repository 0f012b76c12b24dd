package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
)

// TestHostHeader: the viewer answers to the loopback names, the address it
// listens on and the --host names, and refuses a request naming another
// host (a site's name rebound to 127.0.0.1: DNS rebinding). Mutation
// caught: the command serving without view.Hosts (a rebound name served).
func TestHostHeader(t *testing.T) {
	dir := t.TempDir()
	runLoop(t, checkpoint.NewDir(dir), "done", false)
	base := server(t, "--dir", dir, "--host", "viewer.test")
	get := func(host string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+"/session/done", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	addr := strings.TrimPrefix(base, "http://")
	for host, want := range map[string]int{addr: 200, "localhost": 200, "viewer.test:80": 200,
		"rebound.example": 403, "rebound.example:" + addr[strings.LastIndexByte(addr, ':')+1:]: 403} {
		if got := get(host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}
