package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// result is what one call showed its caller, printed as one JSON line.
type result struct {
	Code     int                 `json:"code"`
	Message  string              `json:"message"`
	Messages []string            `json:"messages"`
	Headers  map[string][]string `json:"headers"`
	Trailers map[string][]string `json:"trailers"`
}

var streamDesc = grpc.StreamDesc{ServerStreams: true}

// call makes one call of the named case to addr:
//
//	unary     repeated x-peer-twice and x-peer-twice-bin fields to Unary
//	stream    Stream of 50 messages
//	fail      Fail: its status and trailer
//	deadline  Hang with a 500 ms deadline
//	cancel    Hang, cancelled by the client after 500 ms
func call(addr, name string) {
	conn, err := grpc.Dial(addr, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		"x-peer-twice", "first", "x-peer-twice", "second",
		"x-peer-twice-bin", "\x00\x01", "x-peer-twice-bin", "\xff\xfe\xfd")
	var cancel context.CancelFunc
	method := map[string]string{"unary": "Unary", "stream": "Stream", "fail": "Fail", "deadline": "Hang", "cancel": "Hang"}[name]
	if method == "" {
		fmt.Fprintln(os.Stderr, "unknown case", name)
		os.Exit(2)
	}
	switch name {
	case "deadline":
		ctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
	default:
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	if name == "cancel" {
		time.AfterFunc(500*time.Millisecond, cancel)
	}
	r := result{Messages: []string{}, Headers: map[string][]string{}, Trailers: map[string][]string{}}
	stream, err := conn.NewStream(ctx, &streamDesc, "/interop.Echo/"+method)
	if err == nil {
		req := []byte("go")
		if name == "stream" {
			req = []byte("50")
		}
		if err = stream.SendMsg(&req); err == nil {
			err = stream.CloseSend()
		}
		for err == nil {
			var msg []byte
			if err = stream.RecvMsg(&msg); err == nil {
				r.Messages = append(r.Messages, string(msg))
			}
		}
		if md, herr := stream.Header(); herr == nil {
			r.Headers = printable(md)
		}
		r.Trailers = printable(stream.Trailer())
	}
	st := status.Convert(err)
	if err == io.EOF {
		st = status.New(codes.OK, "")
	}
	r.Code = int(st.Code())
	r.Message = st.Message()
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

// printable keeps the x-peer-* fields, binary values as hex.
func printable(md metadata.MD) map[string][]string {
	out := map[string][]string{}
	for k, vs := range md {
		if !strings.HasPrefix(k, "x-peer") {
			continue
		}
		for _, v := range vs {
			if strings.HasSuffix(k, "-bin") {
				v = fmt.Sprintf("%x", v)
			}
			out[k] = append(out[k], v)
		}
	}
	return out
}
