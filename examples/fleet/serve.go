package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate/fleet"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c common
	c.register(fs)
	concurrency := fs.Int("concurrency", fleet.DefaultConcurrency, "sessions of each kind run at once by this worker")
	lease := fs.Duration("lease", fleet.DefaultLease, "the session lease: bounds the pickup of a dead worker's sessions")
	poll := fs.Duration("poll", fleet.DefaultPoll, "how often the worker looks for work, dead holders and cancellations")
	keep := fs.Int("keep", checkpoint.DefaultKeep, "checkpoint generations kept per session")
	holder := fs.String("holder", "", `how this worker names itself in leases (default "<hostname> pid <pid>")`)
	withLedger := fs.Bool("ledger", true, "record every synthetic task and iteration executed in fleet_task_runs and fleet_integrations")
	if err := parse(fs, args, stderr, 0); err != nil {
		return err
	}
	if *concurrency < 1 {
		return errors.New("--concurrency must be at least 1")
	}
	// SIGTERM or SIGINT ends Work's context: every loop stops at its next
	// safe point, saved as interrupted, and its job goes back to the queue.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()),
		zapcore.AddSync(stderr), zap.WarnLevel))
	opts := []fleet.Option{fleet.Concurrency(*concurrency), fleet.Lease(*lease), fleet.Poll(*poll),
		storeOptions(*keep), fleet.Logger(log)}
	if *holder != "" {
		opts = append(opts, fleet.Holder(*holder))
	}
	// Room for the loops' saves and renewals of both kinds, and the
	// worker's own queries.
	h, err := c.open(ctx, 4**concurrency+10, *withLedger, opts...)
	if err != nil {
		return err
	}
	defer h.close()
	fmt.Fprintf(stdout, "fleet serve: worker %q ready (kinds synthetic and research, concurrency %d, lease %v)\n",
		h.fleet.Holder(), *concurrency, *lease)
	go func() {
		<-ctx.Done()
		// A second signal ends the process at once.
		stop()
		fmt.Fprintln(stdout, "fleet serve: stopping loops at their next safe point (a second signal ends the process now)")
	}()
	start := time.Now()
	if err := h.fleet.Work(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fleet serve: stopped after %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}
