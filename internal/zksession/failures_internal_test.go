package zksession

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"
)

// TestFailuresWarnAtMostEveryTenSeconds fails a dial every second for half
// a minute: the first failure and one every warnEvery are warnings naming
// the server and the error, with how many were logged at DEBUG between.
func TestFailuresWarnAtMostEveryTenSeconds(t *testing.T) {
	t.Parallel()
	logs := &records{}
	now := time.Unix(1000, 0)
	f := &failures{logger: slog.New(logs), now: func() time.Time { return now }}
	refused := errors.New("connect: connection refused")
	var got []string
	for range 31 {
		f.failed("127.0.0.1:2181", refused)
		now = now.Add(time.Second)
	}
	for _, r := range logs.kept {
		if r.Level != slog.LevelWarn || r.Attrs["server"] != "127.0.0.1:2181" || r.Attrs["err"] != refused.Error() {
			t.Errorf("log record %+v, want a warning naming the server and the error", r)
		}
		got = append(got, r.Attrs["suppressed"])
	}
	if want := []string{"0", "9", "9", "9"}; !slices.Equal(got, want) {
		t.Errorf("warnings counted %v failures in between, want %v", got, want)
	}
	if n := len(logs.kept); n != 4 {
		t.Errorf("%d warnings for 31 failures over 30s, want 4", n)
	}

	f.setUp(true)
	if up, err := f.snapshot(); !up || err != nil {
		t.Errorf("snapshot() with a session up = %v, %v; want true, nil", up, err)
	}
	f.setUp(false)
	f.stop()
	f.failed("127.0.0.1:2181", errors.New("use of closed network connection"))
	if _, err := f.snapshot(); err != nil {
		t.Errorf("snapshot() after stop = %v, want no failure recorded", err)
	}
}

// records keeps the records logged at WARN and above (all of them with
// all), their attributes as strings. It is not safe for concurrent use;
// failures and a session's states log in their caller.
type records struct {
	kept []record
	all  bool
}

type record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (l *records) Enabled(_ context.Context, level slog.Level) bool {
	return l.all || level >= slog.LevelWarn
}
func (l *records) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *records) WithGroup(string) slog.Handler      { return l }

func (l *records) Handle(_ context.Context, r slog.Record) error {
	rec := record{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	l.kept = append(l.kept, rec)
	return nil
}
