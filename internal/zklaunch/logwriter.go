package zklaunch

import (
	"bytes"
	"io"
	"sync"
)

// logMu serializes writes to every JVM.Log.
var logMu sync.Mutex

// prefixWriter prefixes each line written to w with a server's name. It
// never fails: a broken Log must not stall a server's output pipe.
type prefixWriter struct {
	w       io.Writer
	prefix  []byte
	midLine bool // guarded by logMu
}

func newPrefixWriter(w io.Writer, name string) *prefixWriter {
	return &prefixWriter{w: w, prefix: []byte(name + ": ")}
}

func (pw *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	var buf bytes.Buffer
	logMu.Lock()
	defer logMu.Unlock()
	for len(b) > 0 {
		if !pw.midLine {
			buf.Write(pw.prefix)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			buf.Write(b)
			pw.midLine = true
			break
		}
		buf.Write(b[:i+1])
		b = b[i+1:]
		pw.midLine = false
	}
	_, _ = pw.w.Write(buf.Bytes())
	return n, nil
}
