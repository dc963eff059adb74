// ttrpc-client calls a ttrpc server over a unix socket with containerd's Go
// ttrpc client and prints the results as one JSON object on stdout.
//
// Either one step from flags (-service, -method, -payload HEX or
// -payload-len N, -n calls, -c concurrency) or several steps run in order on
// the same connection (-plan '[{"service":...,"method":...,"n":1,"c":1},...]').
package main

import (
	"context"
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
}

type result struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
	Payload string `json:"payload"`
	Error   string `json:"error,omitempty"`
}

type stepResult struct {
	Results     []result       `json:"results,omitempty"`
	Codes       map[uint32]int `json:"codes"`
	ElapsedMs   float64        `json:"elapsedMs"`
	CallsPerSec float64        `json:"callsPerSec"`
}

func call(client *ttrpc.Client, s step, payload []byte) result {
	ctx := context.Background()
	if s.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	var resp rawmsg.Raw
	err := client.Call(ctx, s.Service, s.Method, &rawmsg.Raw{B: payload}, &resp)
	r := result{Payload: hex.EncodeToString(resp.B)}
	if err != nil {
		if st, ok := status.FromError(err); ok {
			r.Code = uint32(st.Code())
			r.Message = st.Message()
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
	payload, err := hex.DecodeString(s.Payload)
	if err != nil {
		return stepResult{}, fmt.Errorf("bad payload hex: %w", err)
	}
	if s.PayloadLen > 0 {
		payload = filler(s.PayloadLen)
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
	steps := []step{{*service, *method, *payload, *payloadLen, *n, *c, *timeoutMs}}
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
	client := ttrpc.NewClient(conn)
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
