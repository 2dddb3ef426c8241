// HTTP/2 frame facts the relay reads (RFC 9113 §4.1, §6): types, flags and
// the settings it follows. Types not listed are extensions: relayed untouched
// and otherwise ignored (§5.5).

/** Frame types, RFC 9113 §6 (https://www.rfc-editor.org/rfc/rfc9113#section-6). */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Flags, by the frame types that define them (RFC 9113 §6). */
export const Flag = {
  /** DATA, HEADERS: the sender's last frame on the stream. */
  END_STREAM: 0x1,
  /** SETTINGS, PING: an acknowledgement. */
  ACK: 0x1,
  /** HEADERS, PUSH_PROMISE, CONTINUATION: the header block is complete. */
  END_HEADERS: 0x4,
  /** DATA, HEADERS, PUSH_PROMISE: a pad length byte leads, padding trails. */
  PADDED: 0x8,
  /** HEADERS: 5 bytes of stream dependency and weight lead the block. */
  PRIORITY: 0x20,
} as const;

/** Settings the relay follows, RFC 9113 §6.5.2. */
export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
} as const;

/** SETTINGS_MAX_FRAME_SIZE's initial value, and the least a peer may set (RFC 9113 §6.5.2). */
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
/** The largest SETTINGS_MAX_FRAME_SIZE (§6.5.2): what the 24-bit length can state. */
export const LARGEST_FRAME_SIZE = 0xffffff;
/** The largest flow-control window (§6.9.1), and so SETTINGS_INITIAL_WINDOW_SIZE (§6.5.2). */
export const MAX_WINDOW = 0x7fffffff;

/** Flow-control windows start at 65,535 octets (RFC 9113 §6.9.2); SETTINGS_INITIAL_WINDOW_SIZE changes a stream's. */
export const DEFAULT_WINDOW = 65_535;

/** The largest stream id (§5.1.1). */
export const MAX_STREAM_ID = 0x7fffffff;

/** The 9-byte frame header (§4.1). */
export const FRAME_HEADER_LENGTH = 9;

/** The client connection preface (§3.4). */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
