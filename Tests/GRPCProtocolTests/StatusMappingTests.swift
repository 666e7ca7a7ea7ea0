// Tests/GRPCProtocolTests/StatusMappingTests.swift - HTTP status, HTTP/2 error code and content-type rules

import GRPCProtocol
import Testing

@Suite("Status mapping")
struct StatusMappingTests {
  @Test(
    "HTTP status → gRPC code, every row of http-grpc-status-mapping.md",
    arguments: [
      (400, GRPCStatusCode.internalError),
      (401, .unauthenticated),
      (403, .permissionDenied),
      (404, .unimplemented),
      (429, .unavailable),
      (431, .internalError),
      (502, .unavailable),
      (503, .unavailable),
      (504, .unavailable),
    ])
  func httpTable(status: Int, code: GRPCStatusCode) {
    #expect(GRPCStatusMapping.code(forHTTPStatus: status) == code)
  }

  @Test(
    "every other final HTTP status is UNKNOWN, 200 included",
    arguments: [
      200, 201, 204, 206, 301, 302, 304, 402, 405, 408, 409, 410, 413, 415, 418, 451, 500, 501, 505, 511, 599,
    ])
  func httpOther(status: Int) {
    #expect(GRPCStatusMapping.code(forHTTPStatus: status) == .unknown)
  }

  @Test("the whole 200…599 range maps only to the table's codes or UNKNOWN")
  func httpRange() {
    let table: Set = [400, 401, 403, 404, 429, 431, 502, 503, 504]
    for status in 200...599 where !table.contains(status) {
      #expect(GRPCStatusMapping.code(forHTTPStatus: status) == .unknown, "HTTP \(status)")
    }
  }

  @Test("1xx informational statuses map to INTERNAL", arguments: [100, 101, 102, 103, 199])
  func informational(status: Int) {
    #expect(GRPCStatusMapping.code(forHTTPStatus: status) == .internalError)
  }

  @Test(
    "HTTP/2 error code → gRPC code, every row of PROTOCOL-HTTP2.md's Errors section",
    arguments: [
      (UInt32(0x0), "NO_ERROR", GRPCStatusCode.internalError),
      (0x1, "PROTOCOL_ERROR", .internalError),
      (0x2, "INTERNAL_ERROR", .internalError),
      (0x3, "FLOW_CONTROL_ERROR", .internalError),
      (0x4, "SETTINGS_TIMEOUT", .internalError),
      (0x5, "STREAM_CLOSED", .internalError),
      (0x6, "FRAME_SIZE_ERROR", .internalError),
      (0x7, "REFUSED_STREAM", .unavailable),
      (0x8, "CANCEL", .cancelled),
      (0x9, "COMPRESSION_ERROR", .internalError),
      (0xa, "CONNECT_ERROR", .internalError),
      (0xb, "ENHANCE_YOUR_CALM", .resourceExhausted),
      (0xc, "INADEQUATE_SECURITY", .permissionDenied),
      (0xd, "HTTP_1_1_REQUIRED", .internalError),
    ])
  func http2Table(raw: UInt32, name: String, code: GRPCStatusCode) {
    let errorCode = HTTP2ErrorCode(rawValue: raw)
    #expect(GRPCStatusMapping.code(for: errorCode) == code)
    #expect(errorCode.name == name)
  }

  @Test("unknown HTTP/2 error codes are INTERNAL", arguments: [UInt32(0xe), 0xf, 0x100, 0xFFFF_FFFF])
  func http2Unknown(raw: UInt32) {
    let errorCode = HTTP2ErrorCode(rawValue: raw)
    #expect(GRPCStatusMapping.code(for: errorCode) == .internalError)
    #expect(errorCode.name == "0x" + String(raw, radix: 16))
  }

  @Test("the named HTTP/2 error code constants match RFC 9113")
  func http2Constants() {
    let codes: [HTTP2ErrorCode] = [
      .noError, .protocolError, .internalError, .flowControlError, .settingsTimeout, .streamClosed,
      .frameSizeError, .refusedStream, .cancel, .compressionError, .connectError, .enhanceYourCalm,
      .inadequateSecurity, .http11Required,
    ]
    #expect(codes.map(\.rawValue) == Array(0...0xd))
  }

  @Test(
    "gRPC content types",
    arguments: [
      "application/grpc", "application/grpc+proto", "application/grpc+json", "application/grpc;charset=utf-8",
      "application/grpc; charset=utf-8", "application/grpc+", "Application/GRPC", "APPLICATION/GRPC+PROTO",
    ])
  func grpcContentTypes(value: String) {
    #expect(GRPCStatusMapping.isGRPCContentType(value))
  }

  @Test(
    "non-gRPC content types",
    arguments: [
      "", "application/grp", "application/grpcx", "application/grpc-web", "application/grpc-web+proto",
      "application/grpc ", " application/grpc", "text/html", "application/json", "application/grpcweb",
      "application/x-grpc", "application/gRPC-web",
    ])
  func nonGRPCContentTypes(value: String) {
    #expect(!GRPCStatusMapping.isGRPCContentType(value))
  }
}
