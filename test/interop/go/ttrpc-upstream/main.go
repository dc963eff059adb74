// ttrpc-upstream is the stand-in for the agent behind netagent in front
// mode: containerd's Go ttrpc server on a unix socket that records every
// request it receives, as read off the wire (service, method, payload
// length and SHA-256, timeout_nano, metadata in order), one JSON line each
// in -log, beside connection opens and closes and what its handlers saw.
//
// It serves grpc.Health (Check, Version), grpc.AgentService (every method
// name in agentMethods: an empty answer; GetMetrics a Prometheus text) and
// netagent.test.Upstream, whose methods answer what a test asks for:
//
//	Echo   the request payload back
//	Answer {1: size, 2: seed}: size bytes of pattern(seed)
//	Fail   {1: code, 2: message, 3: details value}: that status (one detail
//	       of type netagent.test.Detail when 3 is set)
//	Sleep  {1: ms, 2: tag}: waits ms or until the call's context ends and
//	       logs which ("slept", "deadline", "cancelled")
//	Hang   {1: ms}: waits ms whatever the context says (an upstream that
//	       ignores deadlines), then answers empty
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/gogo/protobuf/proto"
	anypb "github.com/golang/protobuf/ptypes/any"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"

	rawmsg "../rawmsg"
)

// The Kata agent's grpc.AgentService methods (agent.proto), network ones included:
// a call that reaches the stand-in shows in its log, so a test can say none did.
var agentMethods = []string{
	"CreateContainer", "StartContainer", "RemoveContainer", "ExecProcess", "SignalProcess",
	"WaitProcess", "UpdateContainer", "UpdateEphemeralMounts", "StatsContainer",
	"PauseContainer", "ResumeContainer", "RemoveStaleVirtiofsShareMounts", "WriteStdin",
	"ReadStdout", "ReadStderr", "CloseStdin", "TtyWinResize", "UpdateInterface",
	"UpdateRoutes", "ListInterfaces", "ListRoutes", "AddARPNeighbors", "GetIPTables",
	"SetIPTables", "GetMetrics", "CreateSandbox", "DestroySandbox", "OnlineCPUMem",
	"ReseedRandomDev", "GetGuestDetails", "MemHotplugByProbe", "SetGuestDateTime",
	"CopyFile", "GetOOMEvent", "AddSwap", "GetVolumeStats", "ResizeVolume", "SetPolicy",
	"MemAgentMemcgSet", "MemAgentCompactSet",
}

// The stand-in's metrics, as the Kata agent names its own.
const metricsText = "# HELP kata_agent_process_cpu_seconds_total Total user and system CPU time spent in seconds.\n" +
	"# TYPE kata_agent_process_cpu_seconds_total counter\n" +
	"kata_agent_process_cpu_seconds_total 0.25\n"

type logger struct {
	mu   sync.Mutex
	file *os.File
}

func (l *logger) log(fields map[string]interface{}) {
	fields["t"] = float64(time.Now().UnixNano()) / 1e6
	line, _ := json.Marshal(fields)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file.Write(append(line, '\n'))
}

var out *logger

// field reads the protobuf fields of a control request: varints and bytes by number.
func fields(b []byte) (map[int]uint64, map[int][]byte) {
	ints, strs := map[int]uint64{}, map[int][]byte{}
	for len(b) > 0 {
		tag, n := proto.DecodeVarint(b)
		if n == 0 {
			break
		}
		b = b[n:]
		num, wire := int(tag>>3), tag&7
		switch wire {
		case 0:
			v, m := proto.DecodeVarint(b)
			if m == 0 {
				return ints, strs
			}
			ints[num], b = v, b[m:]
		case 2:
			l, m := proto.DecodeVarint(b)
			if m == 0 || uint64(len(b)-m) < l {
				return ints, strs
			}
			strs[num], b = b[m:m+int(l)], b[m+int(l):]
		default:
			return ints, strs
		}
	}
	return ints, strs
}

// pattern is the Answer method's bytes: byte i = (i*31 + seed) mod 251.
func pattern(size, seed uint64) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte((uint64(i)*31 + seed) % 251)
	}
	return b
}

func request(unmarshal func(interface{}) error) ([]byte, error) {
	var req rawmsg.Raw
	if err := unmarshal(&req); err != nil {
		return nil, err
	}
	return req.B, nil
}

func fixed(answer []byte) ttrpc.Method {
	return func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
		if _, err := request(unmarshal); err != nil {
			return nil, err
		}
		return &rawmsg.Raw{B: answer}, nil
	}
}

func metricsAnswer() []byte {
	b := append([]byte{0x0a}, proto.EncodeVarint(uint64(len(metricsText)))...)
	return append(b, metricsText...)
}

func versionAnswer() []byte {
	b := []byte{0x0a, 5}
	b = append(b, "0.0.1"...)
	b = append(b, 0x12, 8)
	return append(b, "stand-in"...)
}

var upstreamMethods = map[string]ttrpc.Method{
	"Echo": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
		p, err := request(unmarshal)
		if err != nil {
			return nil, err
		}
		return &rawmsg.Raw{B: p}, nil
	},
	"Answer": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
		p, err := request(unmarshal)
		if err != nil {
			return nil, err
		}
		ints, _ := fields(p)
		return &rawmsg.Raw{B: pattern(ints[1], ints[2])}, nil
	},
	"Fail": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
		p, err := request(unmarshal)
		if err != nil {
			return nil, err
		}
		ints, strs := fields(p)
		st := &spb.Status{Code: int32(ints[1]), Message: string(strs[2])}
		if d, ok := strs[3]; ok {
			st.Details = []*anypb.Any{{TypeUrl: "type.googleapis.com/netagent.test.Detail", Value: d}}
		}
		return nil, status.ErrorProto(st)
	},
	"Hang": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
		p, err := request(unmarshal)
		if err != nil {
			return nil, err
		}
		ints, _ := fields(p)
		// not a wait: the stand-in upstream's Sleep method: as long as the request asks
		time.Sleep(time.Duration(ints[1]) * time.Millisecond)
		return &rawmsg.Raw{}, nil
	},
	"Sleep": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
		p, err := request(unmarshal)
		if err != nil {
			return nil, err
		}
		ints, strs := fields(p)
		start := time.Now()
		ended := func(how string) {
			out.log(map[string]interface{}{
				"event": "sleep-ended", "tag": string(strs[2]), "how": how,
				"afterMs": float64(time.Since(start).Microseconds()) / 1000,
			})
		}
		select {
		// not a wait: the stand-in upstream's Sleep method: as long as the request asks, or until cancelled
		case <-time.After(time.Duration(ints[1]) * time.Millisecond):
			ended("slept")
			return &rawmsg.Raw{}, nil
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				ended("deadline")
			} else {
				ended("cancelled")
			}
			return nil, ctx.Err()
		}
	},
}

func main() {
	socket := flag.String("socket", "", "unix socket path to listen on")
	logPath := flag.String("log", "", "JSON lines file to append the record to")
	name := flag.String("name", "upstream", "this instance's name in the record")
	flag.Parse()
	if *socket == "" || *logPath == "" {
		fmt.Fprintln(os.Stderr, "ttrpc-upstream: -socket and -log are required")
		os.Exit(2)
	}
	f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttrpc-upstream:", err)
		os.Exit(1)
	}
	out = &logger{file: f}
	os.Remove(*socket)
	l, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttrpc-upstream:", err)
		os.Exit(1)
	}
	answered := func(ctx context.Context, unmarshal ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, m ttrpc.Method) (interface{}, error) {
		resp, err := m(ctx, unmarshal)
		st, _ := status.FromError(err)
		out.log(map[string]interface{}{"event": "answered", "method": info.FullMethod, "code": st.Code(), "instance": *name})
		return resp, err
	}
	s, err := ttrpc.NewServer(ttrpc.WithUnaryServerInterceptor(answered))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttrpc-upstream:", err)
		os.Exit(1)
	}
	agent := map[string]ttrpc.Method{}
	for _, m := range agentMethods {
		agent[m] = fixed(nil)
	}
	agent["GetMetrics"] = fixed(metricsAnswer())
	s.Register("grpc.AgentService", agent)
	s.Register("grpc.Health", map[string]ttrpc.Method{
		"Check":   fixed([]byte{0x08, 0x01}),
		"Version": fixed(versionAnswer()),
	})
	s.Register("netagent.test.Upstream", upstreamMethods)

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
	out.log(map[string]interface{}{"event": "listening", "socket": *socket, "instance": *name, "pid": os.Getpid()})
	if err := s.Serve(context.Background(), &recordingListener{Listener: l, instance: *name}); err != nil && err != ttrpc.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "ttrpc-upstream:", err)
		os.Exit(1)
	}
	select {}
}
