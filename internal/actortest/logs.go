package actortest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// Record is a log record kept by [Logs], its attributes as strings.
type Record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// Logs is a slog.Handler that keeps the records at warning level and
// above (or the level given to [NewLogsFrom]), for tests that check what
// an actor logs.
type Logs struct {
	min     slog.Level
	mu      sync.Mutex
	records []Record
	taken   int           // records returned by Next
	added   chan struct{} // one token per record, sent after it is kept
}

// NewLogs returns an empty Logs; slog.New(logs) logs into it.
func NewLogs() *Logs { return NewLogsFrom(slog.LevelWarn) }

// NewLogsFrom returns an empty Logs that keeps the records at level min
// and above.
func NewLogsFrom(min slog.Level) *Logs { return &Logs{min: min, added: make(chan struct{}, 1024)} }

func (l *Logs) Enabled(_ context.Context, level slog.Level) bool { return level >= l.min }
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler               { return l }
func (l *Logs) WithGroup(string) slog.Handler                    { return l }

func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, rec)
	l.mu.Unlock()
	l.added <- struct{}{}
	return nil
}

// Next returns the next record, in the order they were logged, waiting
// for it if need be and failing tb if none comes within the given time.
func (l *Logs) Next(tb testing.TB, within time.Duration) Record {
	tb.Helper()
	select {
	case <-l.added:
	case <-time.After(within):
		tb.Fatalf("no log record at level %v or above", l.min)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.taken++
	return l.records[l.taken-1]
}

// Count returns how many records have been kept.
func (l *Logs) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records)
}
