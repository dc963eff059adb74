// Package rawmsg is a gogo/protobuf message that carries already-encoded
// bytes, so the interop programs need no generated code: proto.Marshal calls
// Marshal and proto.Unmarshal calls Unmarshal.
package rawmsg

import "encoding/hex"

// Raw holds one encoded protobuf message.
type Raw struct{ B []byte }

func (r *Raw) Reset()                   { r.B = nil }
func (r *Raw) String() string           { return hex.EncodeToString(r.B) }
func (r *Raw) ProtoMessage()            {}
func (r *Raw) Marshal() ([]byte, error) { return r.B, nil }
func (r *Raw) Unmarshal(b []byte) error { r.B = append([]byte(nil), b...); return nil }
