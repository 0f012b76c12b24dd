package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// notifySignals returns a context cancelled by the first SIGINT or SIGTERM,
// and a channel closed by the second one. The program never dies of a
// second signal: the state is saved before any exit. A second signal only
// cuts the wait for the command that is running (see agent.runCommand),
// and is acknowledged on stderr. stop releases the signals.
//
// running says what runs when the second signal arrives ("" for nothing
// but agentloop itself), for the acknowledgement.
func notifySignals(stderr io.Writer, running *activity) (ctx context.Context, hurry <-chan struct{}, stop func()) {
	ctx, stopCtx := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	second := make(chan struct{})
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		count := 0
		for {
			select {
			case <-sigs:
				count++
			case <-done:
				return
			}
			if count == 2 {
				if what := running.current(); what != "" {
					fmt.Fprintf(stderr, "agentloop: interrupted again: stopping the %s at once; the state is saved before exit\n", what)
				} else {
					fmt.Fprintln(stderr, "agentloop: interrupted again; the state is saved before exit")
				}
				close(second)
			}
		}
	}()
	return ctx, second, func() {
		signal.Stop(sigs)
		stopCtx()
		close(done)
		<-ended
	}
}

// whenClosed calls f in a goroutine once ch is closed, unless stop is
// called first; stop returns after f has returned, if it was called.
func whenClosed(ch <-chan struct{}, f func()) (stop func()) {
	cancel := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-ch:
			f()
		case <-cancel:
		}
	}()
	return func() {
		close(cancel)
		<-ended
	}
}

// activity is what command agentloop runs at the moment: "AI CLI",
// "quality gate \"go test ./...\"", "git", or "" between commands. Safe
// for concurrent use; a nil *activity records nothing.
type activity struct {
	mu   sync.Mutex
	what string
}

func (a *activity) set(what string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.what = what
	a.mu.Unlock()
}

func (a *activity) current() string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.what
}
