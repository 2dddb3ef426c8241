package main

import "google.golang.org/grpc/encoding"

// rawCodec sends and receives message bytes as they are (*[]byte), so that no
// .proto file or generated code is needed: the tests compare bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *v.(*[]byte), nil }

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

// Name "proto": peers see application/grpc+proto, as for any protobuf service.
func (rawCodec) Name() string { return "proto" }

// Registered in place of the protobuf codec: this program sends no protobuf messages.
func init() { encoding.RegisterCodec(rawCodec{}) }
