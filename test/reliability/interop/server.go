package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// peerFields are the x-peer-* fields of md, each value as received (binary
// values decoded by grpc-go, printed here as hex so that JSON can carry them).
func peerFields(md metadata.MD) map[string][]string {
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

// handle serves every method of every service (no generated code):
//
//	/interop.Echo/Unary   answers with the x-peer-* fields it received, as JSON, and sends them back in headers and trailers
//	/interop.Echo/Stream  answers "n" with n messages "0".."n-1", 20 ms apart
//	/interop.Echo/Fail    fails FAILED_PRECONDITION with a message, and a trailer
//	/interop.Echo/Hang    never answers; when the call ends it prints "ended /interop.Echo/Hang <status>" on stdout
func handle(_ interface{}, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	md, _ := metadata.FromIncomingContext(stream.Context())
	var req []byte
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	switch method {
	case "/interop.Echo/Unary":
		echo := metadata.MD{}
		for k, vs := range md {
			if strings.HasPrefix(k, "x-peer") {
				echo[k] = vs
			}
		}
		if err := stream.SendHeader(echo); err != nil {
			return err
		}
		stream.SetTrailer(echo)
		body, _ := json.Marshal(peerFields(md))
		return stream.SendMsg(&body)
	case "/interop.Echo/Stream":
		n, _ := strconv.Atoi(string(req))
		for i := 0; i < n; i++ {
			msg := []byte(strconv.Itoa(i))
			if err := stream.SendMsg(&msg); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	case "/interop.Echo/Fail":
		stream.SetTrailer(metadata.Pairs("x-peer-reason", "precondition"))
		return status.Error(codes.FailedPrecondition, "the order is closed: ünïcode")
	case "/interop.Echo/Hang":
		<-stream.Context().Done()
		// The status a current grpc-go server gives a handler that returns its
		// context's error (1.33 sends UNKNOWN "context deadline exceeded"). The
		// client's own timer and these trailers race on a busy machine; either way
		// the client reports DEADLINE_EXCEEDED, with or without the sidecar.
		st := status.FromContextError(stream.Context().Err())
		fmt.Printf("ended %s %s\n", method, st.Code())
		return st.Err()
	}
	return status.Errorf(codes.Unimplemented, "no method %s", method)
}

func serve() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server := grpc.NewServer(grpc.UnknownServiceHandler(handle))
	fmt.Println(lis.Addr().(*net.TCPAddr).Port)
	if err := server.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
