package sandbank

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve runs the bank standalone (at the root) on ln until ctx is done, then
// shuts down gracefully. It returns nil after a shutdown caused by ctx.
func (b *Bank) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           b.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	b.log.Info("sandbank: serving", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("sandbank: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("sandbank: shut down %s: %w", ln.Addr(), err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sandbank: serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// ListenAndServe listens on addr (e.g. "127.0.0.1:8081") and runs Serve.
func (b *Bank) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("sandbank: listen on %s: %w", addr, err)
	}
	return b.Serve(ctx, ln)
}
