// ttrpc-client calls a ttrpc server over a unix socket with containerd's Go
// ttrpc client and prints the results as one JSON object on stdout.
//
// Either one step from flags (-service, -method, -payload HEX or
// -payload-len N, -n calls, -c concurrency) or several steps run in order on
// the same connection (-plan '[{"service":...,"method":...,"n":1,"c":1},...]').
// A step may carry metadata ([[key, value], ...], sent in that order), run
// several steps at once ("parallel": [...], results in "parts"), or close
// the connection closeAfterMs after its calls started (the calls then end
// with the client's own error, and later steps find the connection closed).
// For long or exact payloads: patternLen/patternSeed send byte i =
// (i*31 + seed) mod 251, and hashOnly reports each answer's length and
// SHA-256 instead of its bytes; withStatus adds the status received, hex. waitFor holds a step until that file
// exists; touch creates a file once the step is done (a test steps in
// between, e.g. to kill the server).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/gogo/protobuf/proto"
	"google.golang.org/grpc/status"

	rawmsg "../rawmsg"
)

type step struct {
	Service    string `json:"service"`
	Method     string `json:"method"`
	Payload    string `json:"payload"`
	PayloadLen int    `json:"payloadLen"`
	N          int    `json:"n"`
	C          int    `json:"c"`
	TimeoutMs  int    `json:"timeoutMs"`
	// Metadata pairs in order; a key may repeat.
	Metadata     [][2]string `json:"metadata"`
	Parallel     []step      `json:"parallel"`
	CloseAfterMs int         `json:"closeAfterMs"`
	PatternLen   int         `json:"patternLen"`
	PatternSeed  int         `json:"patternSeed"`
	HashOnly     bool        `json:"hashOnly"`
	WithStatus   bool        `json:"withStatus"`
	WaitFor      string      `json:"waitFor"`
	Touch        string      `json:"touch"`
}

type result struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
	Payload string `json:"payload"`
	Error   string `json:"error,omitempty"`
	// The google.rpc.Status as received, hex (details included), for a non-OK call.
	Status string `json:"status,omitempty"`
	// With hashOnly: the answer's length and SHA-256 (payload left empty).
	PayloadLen    int    `json:"payloadLen,omitempty"`
	PayloadSha256 string `json:"payloadSha256,omitempty"`
}

type stepResult struct {
	Results     []result       `json:"results,omitempty"`
	Codes       map[uint32]int `json:"codes"`
	ElapsedMs   float64        `json:"elapsedMs"`
	CallsPerSec float64        `json:"callsPerSec"`
	Parts       []stepResult   `json:"parts,omitempty"`
}

type metadataKey struct{}

// orderedMetadata puts a step's metadata on the request in the step's
// order: ttrpc.MD is a map, which would send the keys in any order.
func orderedMetadata(ctx context.Context, req *ttrpc.Request, resp *ttrpc.Response, info *ttrpc.UnaryClientInfo, invoker ttrpc.Invoker) error {
	if pairs, ok := ctx.Value(metadataKey{}).([][2]string); ok {
		for _, kv := range pairs {
			req.Metadata = append(req.Metadata, &ttrpc.KeyValue{Key: kv[0], Value: kv[1]})
		}
	}
	return invoker(ctx, req, resp)
}

func call(client *ttrpc.Client, s step, payload []byte) result {
	ctx := context.Background()
	if s.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	if len(s.Metadata) > 0 {
		ctx = context.WithValue(ctx, metadataKey{}, s.Metadata)
	}
	var resp rawmsg.Raw
	err := client.Call(ctx, s.Service, s.Method, &rawmsg.Raw{B: payload}, &resp)
	r := result{}
	if s.HashOnly {
		sum := sha256.Sum256(resp.B)
		r.PayloadLen, r.PayloadSha256 = len(resp.B), hex.EncodeToString(sum[:])
	} else {
		r.Payload = hex.EncodeToString(resp.B)
	}
	if err != nil {
		if st, ok := status.FromError(err); ok {
			r.Code = uint32(st.Code())
			r.Message = st.Message()
			if b, err := proto.Marshal(st.Proto()); err == nil && s.WithStatus {
				r.Status = hex.EncodeToString(b)
			}
		} else {
			r.Code = 2
			r.Message = err.Error()
			r.Error = err.Error()
		}
	}
	return r
}

// filler returns n bytes that decode as a valid, empty-looking protobuf
// message: one unknown bytes field 15 (tag 0x7a) whose value pads to n.
func filler(n int) []byte {
	b := make([]byte, n)
	for vl := 1; vl <= 5; vl++ {
		l := n - 1 - vl
		if l < 0 || len(proto.EncodeVarint(uint64(l))) != vl {
			continue
		}
		b[0] = 0x7a
		copy(b[1:], proto.EncodeVarint(uint64(l)))
		return b
	}
	return b
}

func run(client *ttrpc.Client, s step, summary bool) (stepResult, error) {
	if len(s.Parallel) > 0 {
		parts := make([]stepResult, len(s.Parallel))
		errs := make([]error, len(s.Parallel))
		var wg sync.WaitGroup
		start := time.Now()
		for i, p := range s.Parallel {
			wg.Add(1)
			go func(i int, p step) {
				defer wg.Done()
				parts[i], errs[i] = run(client, p, summary)
			}(i, p)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return stepResult{}, err
			}
		}
		return stepResult{Codes: map[uint32]int{}, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000, Parts: parts}, nil
	}
	payload, err := hex.DecodeString(s.Payload)
	if err != nil {
		return stepResult{}, fmt.Errorf("bad payload hex: %w", err)
	}
	if s.PayloadLen > 0 {
		payload = filler(s.PayloadLen)
	}
	if s.PatternLen > 0 {
		payload = make([]byte, s.PatternLen)
		for i := range payload {
			payload[i] = byte((i*31 + s.PatternSeed) % 251)
		}
	}
	if s.WaitFor != "" {
		// Bounded: a test that failed before creating the file must not leave this waiting.
		// not a wait: the poll interval of a wait bounded by the deadline below
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(s.WaitFor); err == nil {
				break
			}
			if time.Since(start) > time.Minute {
				return stepResult{}, fmt.Errorf("waitFor %s: not there after a minute", s.WaitFor)
			}
		}
	}
	if s.Touch != "" {
		defer os.WriteFile(s.Touch, nil, 0o600)
	}
	if s.N <= 0 {
		s.N = 1
	}
	if s.C <= 0 {
		s.C = 1
	}
	results := make([]result, s.N)
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < s.C; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= s.N {
					return
				}
				results[i] = call(client, s, payload)
			}
		}()
	}
	if s.CloseAfterMs > 0 {
		// not a wait: the test asks the client to hang up after this long
		time.Sleep(time.Duration(s.CloseAfterMs) * time.Millisecond)
		client.Close()
	}
	wg.Wait()
	elapsed := time.Since(start)
	out := stepResult{
		Codes:       map[uint32]int{},
		ElapsedMs:   float64(elapsed.Microseconds()) / 1000,
		CallsPerSec: float64(s.N) / elapsed.Seconds(),
	}
	for _, r := range results {
		out.Codes[r.Code]++
	}
	if !summary {
		out.Results = results
	}
	return out, nil
}

func main() {
	socket := flag.String("socket", "", "unix socket path to dial")
	service := flag.String("service", "grpc.Health", "service name")
	method := flag.String("method", "Check", "method name")
	payload := flag.String("payload", "", "request payload, hex")
	payloadLen := flag.Int("payload-len", 0, "send an N-byte payload (a valid message: one unknown field 15) instead")
	n := flag.Int("n", 1, "number of calls")
	c := flag.Int("c", 1, "concurrency (calls in flight on the one connection)")
	timeoutMs := flag.Int("timeout-ms", 0, "per-call deadline in ms (sent as timeout_nano)")
	plan := flag.String("plan", "", "JSON array of steps; overrides the single-step flags")
	summary := flag.Bool("summary", false, "print code counts and rates only, not each result")
	flag.Parse()
	if *socket == "" {
		fmt.Fprintln(os.Stderr, "ttrpc-client: -socket is required")
		os.Exit(2)
	}
	steps := []step{{Service: *service, Method: *method, Payload: *payload, PayloadLen: *payloadLen, N: *n, C: *c, TimeoutMs: *timeoutMs}}
	if *plan != "" {
		steps = nil
		if err := json.Unmarshal([]byte(*plan), &steps); err != nil {
			fmt.Fprintln(os.Stderr, "ttrpc-client: bad -plan:", err)
			os.Exit(2)
		}
	}
	conn, err := net.Dial("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttrpc-client:", err)
		os.Exit(1)
	}
	client := ttrpc.NewClient(conn, ttrpc.WithUnaryClientInterceptor(orderedMetadata))
	defer client.Close()
	var out struct {
		Steps []stepResult `json:"steps"`
	}
	for _, s := range steps {
		r, err := run(client, s, *summary)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ttrpc-client:", err)
			os.Exit(2)
		}
		out.Steps = append(out.Steps, r)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
