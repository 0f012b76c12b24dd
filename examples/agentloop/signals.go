package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// notifySignals returns a context cancelled by the first SIGINT or SIGTERM,
// and a channel closed by the second one. The program never dies of a
// second signal: the state is saved before any exit. A second signal only
// cuts the wait for the command that is running (see agent.runCommand),
// and is acknowledged on stderr. stop releases the signals.
func notifySignals(stderr io.Writer) (ctx context.Context, hurry <-chan struct{}, stop func()) {
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
				fmt.Fprintln(stderr, "agentloop: interrupted again: stopping the AI CLI at once; the state is saved before exit")
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
