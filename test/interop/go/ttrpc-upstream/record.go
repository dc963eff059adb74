package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net"
	"sync/atomic"

	"github.com/containerd/ttrpc"
	"github.com/gogo/protobuf/proto"
)

// recordingListener hands out connections whose reads are also parsed into
// frames, so every Request is recorded as it came, before ttrpc looks at it
// (an unknown service is recorded too).
type recordingListener struct {
	net.Listener
	instance string
	conns    int64
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	id := atomic.AddInt64(&l.conns, 1)
	out.log(map[string]interface{}{"event": "conn-open", "conn": id, "instance": l.instance})
	return &recordingConn{Conn: c, id: id, instance: l.instance}, nil
}

type recordingConn struct {
	net.Conn
	id       int64
	instance string
	buf      []byte
	skip     uint64
	closed   int32
}

// The largest frame ttrpc takes; a longer one is skipped here as well.
const maxFrame = 4 << 20

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.feed(p[:n])
	if err != nil && atomic.CompareAndSwapInt32(&c.closed, 0, 1) {
		out.log(map[string]interface{}{"event": "conn-closed", "conn": c.id, "instance": c.instance, "why": err.Error()})
	}
	return n, err
}

func (c *recordingConn) feed(b []byte) {
	for len(b) > 0 {
		if c.skip > 0 {
			k := uint64(len(b))
			if k > c.skip {
				k = c.skip
			}
			c.skip -= k
			b = b[k:]
			continue
		}
		c.buf = append(c.buf, b...)
		b = nil
		for len(c.buf) >= 10 {
			length := uint64(binary.BigEndian.Uint32(c.buf[0:4]))
			if length > maxFrame {
				rest := uint64(len(c.buf) - 10)
				if rest >= length {
					c.buf = c.buf[10+length:]
					continue
				}
				c.skip = length - rest
				c.buf = nil
				break
			}
			if uint64(len(c.buf)) < 10+length {
				break
			}
			c.frame(binary.BigEndian.Uint32(c.buf[4:8]), c.buf[8], c.buf[10:10+length])
			c.buf = append([]byte(nil), c.buf[10+length:]...)
		}
	}
}

func (c *recordingConn) frame(stream uint32, kind byte, data []byte) {
	if kind != 1 {
		return
	}
	var req ttrpc.Request
	rec := map[string]interface{}{"event": "request", "conn": c.id, "stream": stream, "instance": c.instance}
	if err := proto.Unmarshal(data, &req); err != nil {
		rec["error"] = err.Error()
		out.log(rec)
		return
	}
	sum := sha256.Sum256(req.Payload)
	md := [][2]string{}
	for _, kv := range req.Metadata {
		md = append(md, [2]string{kv.Key, kv.Value})
	}
	rec["service"] = req.Service
	rec["method"] = req.Method
	rec["payloadLen"] = len(req.Payload)
	rec["payloadSha256"] = hex.EncodeToString(sum[:])
	rec["timeoutNano"] = req.TimeoutNano
	rec["metadata"] = md
	out.log(rec)
}
