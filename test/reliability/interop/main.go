// interop-go: a grpc-go server and client for test/reliability/interop-go.test.ts,
// which runs them on either side of the real rpcscope binary.
//
//	interop-go server            serves on a free loopback port and prints it
//	interop-go client ADDR CASE  makes one call and prints what it saw as JSON
//
// It is built with Debian's golang-google-grpc-dev (grpc-go 1.33) in GOPATH mode,
// so it needs neither the network nor protoc: messages are raw bytes (codec.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "server" {
		serve()
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "client" {
		call(os.Args[2], os.Args[3])
		return
	}
	fmt.Fprintln(os.Stderr, "usage: interop-go server | interop-go client ADDR CASE")
	os.Exit(2)
}
