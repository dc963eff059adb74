// ttrpc-server serves grpc.Health (Check, Version) with containerd's Go
// ttrpc on a unix socket, answering with hand-encoded protobuf bytes.
// It exits 0 on SIGTERM/SIGINT after Shutdown.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/containerd/ttrpc"

	rawmsg "../rawmsg"
)

// HealthCheckResponse{status: SERVING}.
var serving = []byte{0x08, 0x01}

// VersionCheckResponse{grpc_version: "0.0.1", agent_version: "go-ttrpc"}.
func versionResponse() []byte {
	b := []byte{0x0a, 5}
	b = append(b, "0.0.1"...)
	b = append(b, 0x12, 8)
	return append(b, "go-ttrpc"...)
}

func main() {
	socket := flag.String("socket", "", "unix socket path to listen on")
	flag.Parse()
	if *socket == "" {
		fmt.Fprintln(os.Stderr, "ttrpc-server: -socket is required")
		os.Exit(2)
	}
	os.Remove(*socket)
	l, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttrpc-server:", err)
		os.Exit(1)
	}
	s, err := ttrpc.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttrpc-server:", err)
		os.Exit(1)
	}
	answer := func(b []byte) ttrpc.Method {
		return func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
			var req rawmsg.Raw
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			return &rawmsg.Raw{B: b}, nil
		}
	}
	s.Register("grpc.Health", map[string]ttrpc.Method{
		"Check":   answer(serving),
		"Version": answer(versionResponse()),
	})

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		os.Remove(*socket)
		os.Exit(0)
	}()
	if err := s.Serve(context.Background(), l); err != nil && err != ttrpc.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "ttrpc-server:", err)
		os.Exit(1)
	}
	select {}
}
