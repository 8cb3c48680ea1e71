package zksession

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// Auth is one identity given to the server on every connection, as
// ZooKeeper's addauth does: for example Scheme "digest" with Credentials
// "user:secret".
type Auth struct {
	Scheme      string
	Credentials []byte
}

// authenticate gives the server every identity of cfg.Auth, in order, and
// returns once it has accepted them all; Run calls it before it hands the
// client to anyone, so that no request of ours goes out without them. The
// client keeps what the server accepted and sends it again, before any
// request, on every later connection, to the same session or a new one.
//
// A connection that fails before the answer loses the identity (the client
// keeps it only once accepted, and the server ties it to the connection):
// it is asked again, on the next connection. A server that refuses it
// (an unknown scheme, credentials that scheme rejects) answers
// zk.ErrAuthFailed, which is final. If ctx ends first, it returns ctx's
// error and leaves a request behind, which the client fails when it is
// closed: Run waits for it through s.authPending.
func (s *Session) authenticate(ctx context.Context, client *zk.Conn) error {
	for _, a := range s.cfg.Auth {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 50*time.Millisecond, time.Second, 0
		op := func() error {
			done := make(chan error, 1)
			go func() { done <- client.AddAuth(a.Scheme, a.Credentials) }()
			var err error
			select {
			case err = <-done:
			case <-ctx.Done():
				s.authPending = done
				return backoff.Permanent(ctx.Err())
			}
			switch {
			case err == nil:
				return nil
			case errors.Is(err, zk.ErrAuthFailed):
				return backoff.Permanent(fmt.Errorf("session: ZooKeeper refuses the credentials of scheme %q (AuthFailed): %w", a.Scheme, err))
			case errors.Is(err, zk.ErrClosing):
				return backoff.Permanent(err)
			}
			s.cfg.Logger.Debug("zkalloc: giving credentials to ZooKeeper failed; again on the next connection", "scheme", a.Scheme, "err", err)
			return err
		}
		if err := backoff.Retry(op, backoff.WithContext(b, ctx)); err != nil {
			return err
		}
	}
	return nil
}
