// Tests/GRPCProtocolTests/MetadataTests.swift - metadata storage, header encoding, validation and base64

import Primitives
import Testing

@testable import GRPCProtocol

@Suite("Base64")
struct Base64Tests {
  /// RFC 4648 §10 test vectors, plus bytes that use '+' and '/'.
  static let vectors: [(String, String, String)] = [
    ("", "", ""),
    ("f", "Zg==", "Zg"),
    ("fo", "Zm8=", "Zm8"),
    ("foo", "Zm9v", "Zm9v"),
    ("foob", "Zm9vYg==", "Zm9vYg"),
    ("fooba", "Zm9vYmE=", "Zm9vYmE"),
    ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
  ]

  @Test("RFC 4648 vectors encode padded and unpadded, and decode from both", arguments: vectors)
  func rfcVectors(plain: String, padded: String, unpadded: String) {
    let bytes = Array(plain.utf8)
    #expect(Base64.encode(bytes, padded: true) == padded)
    #expect(Base64.encode(bytes, padded: false) == unpadded)
    #expect(Base64.decode(Array(padded.utf8), strict: false) == bytes)
    #expect(Base64.decode(Array(unpadded.utf8), strict: false) == bytes)
  }

  @Test("the whole alphabet, including + and /")
  func alphabet() {
    let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x10, 0x83]
    #expect(Base64.encode(bytes, padded: false) == "+/+/ABCD")
    #expect(Base64.decode(Array("+/+/ABCD".utf8), strict: false) == bytes)
  }

  @Test("every byte value and every length up to 300 round-trip, padded and unpadded")
  func roundTrip() {
    for length in 0...300 {
      let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length) }
      #expect(Base64.decode(Array(Base64.encode(bytes, padded: false).utf8), strict: false) == bytes)
      #expect(Base64.decode(Array(Base64.encode(bytes, padded: true).utf8), strict: false) == bytes)
      #expect(Base64.encode(bytes, padded: false).utf8.count == (length * 4 + 2) / 3)
    }
  }

  @Test(
    "malformed base64 is rejected",
    arguments: [
      "Z",  // one character cannot hold a byte
      "Zm9vY",  // neither can 4n+1
      "Zg=",  // padding that does not complete the group
      "Zg===",  // three padding characters
      "Z===",
      "=",
      "==",
      "Zm8=Zm8=",  // padding in the middle
      "Zm 9v",  // whitespace
      "Zm9v\n",
      "Zm-9",  // URL-safe alphabet is not gRPC's
      "Zm_9",
      "Zm9v!",
      "Zé==",  // non-ASCII
    ])
  func malformed(text: String) {
    #expect(Base64.decode(Array(text.utf8), strict: false) == nil)
  }
}

@Suite("Metadata")
struct MetadataTests {
  @Test("entries keep insertion order and duplicates; names are lowercased")
  func orderAndDuplicates() {
    var metadata = GRPCMetadata()
    metadata.add("X-Trip", "a")
    metadata.add("x-other", "b")
    metadata.add("x-trip", "c")
    #expect(metadata.count == 3)
    #expect(metadata.map(\.name) == ["x-trip", "x-other", "x-trip"])
    #expect(metadata["X-TRIP"] == [.string("a"), .string("c")])
    #expect(metadata.first("x-trip") == "a")
    #expect(metadata.first("missing") == nil)
    #expect(metadata["missing"].isEmpty)
  }

  @Test("-bin names hold binary values; a string under a -bin name is stored as its UTF-8")
  func binaryValues() {
    var metadata = GRPCMetadata()
    metadata.add("Trace-Bin", binary: [0, 1, 255])
    metadata.add("text-bin", "hé")
    #expect(metadata.firstBinary("trace-bin") == [0, 1, 255])
    #expect(metadata.first("trace-bin") == nil)
    #expect(metadata.firstBinary("text-bin") == [0x68, 0xC3, 0xA9])
    #expect(metadata["trace-bin"] == [.binary([0, 1, 255])])
    #expect(metadata.firstBinary("missing-bin") == nil)
  }

  @Test("dictionary literals, string interpolation and binary values")
  func literals() {
    let token = "abc"
    let metadata: GRPCMetadata = ["Authorization": "Bearer \(token)", "x-id": "7", "x-raw-bin": .binary([9])]
    #expect(metadata.first("authorization") == "Bearer abc")
    #expect(metadata.first("x-id") == "7")
    #expect(metadata.firstBinary("x-raw-bin") == [9])
    let empty: GRPCMetadata = [:]
    #expect(empty.isEmpty)
    #expect(empty == GRPCMetadata())
  }

  @Test("removeAll drops every value of one name")
  func removeAll() {
    var metadata: GRPCMetadata = ["a": "1", "b": "2", "A": "3"]
    metadata.removeAll("A")
    #expect(metadata.map(\.name) == ["b"])
  }

  @Test("equality and hashing follow entries and their order")
  func hashable() {
    let ab: GRPCMetadata = ["a": "1", "b": "2"]
    let ba: GRPCMetadata = ["b": "2", "a": "1"]
    #expect(ab == (["a": "1", "b": "2"] as GRPCMetadata))
    #expect(ab != ba)
    #expect(Set([ab, ab, ba]).count == 2)
  }

  @Test("header fields encode binary values as unpadded base64, strings as they are")
  func headerFieldsEncoding() {
    var metadata = GRPCMetadata()
    metadata.add("x-a", "plain value")
    metadata.add("x-b-bin", binary: Array("f".utf8))
    metadata.add("x-c-bin", binary: [])
    let fields = metadata.headerFields
    #expect(fields.map(\.name) == ["x-a", "x-b-bin", "x-c-bin"])
    #expect(fields.map(\.value) == ["plain value", "Zg", ""])
  }

  @Test("decoding strips pseudo-headers and transport fields, keeps the rest in order")
  func decodingStrips() {
    let fields: [(name: String, value: String)] = [
      (":status", "200"),
      ("content-type", "application/grpc"),
      ("grpc-status", "0"),
      ("grpc-message", "fine"),
      ("grpc-encoding", "identity"),
      ("grpc-accept-encoding", "gzip"),
      ("user-agent", "server/1"),
      ("x-a", "1"),
      ("X-B", "2"),
      ("x-a", "3"),
      ("grpc-status-details-bin", "AQI"),
    ]
    let metadata = GRPCMetadata(decodingHeaderFields: fields)
    #expect(metadata.map(\.name) == ["user-agent", "x-a", "x-b", "x-a", "grpc-status-details-bin"])
    #expect(metadata["x-a"] == [.string("1"), .string("3")])
    #expect(metadata.firstBinary("grpc-status-details-bin") == [1, 2])
  }

  @Test(
    "-bin values decode padded, unpadded and comma-joined; malformed pieces are dropped",
    arguments: [
      ("Zm9vYg==", [[0x66, 0x6F, 0x6F, 0x62]]),
      ("Zm9vYg", [[0x66, 0x6F, 0x6F, 0x62]]),
      ("Zg,Zm8", [[0x66], [0x66, 0x6F]]),
      ("Zg==,Zm8=", [[0x66], [0x66, 0x6F]]),
      ("Zg, Zm8", [[0x66], [0x66, 0x6F]]),  // HTTP joins repeated fields with ", "
      ("", [[]]),  // an empty value is zero bytes
      ("Zg,,Zm8", [[0x66], [], [0x66, 0x6F]]),  // empty pieces too
      ("Zg,!!,Zm8", [[0x66], [0x66, 0x6F]]),  // the malformed middle piece is dropped
      ("Z", []),  // malformed alone: nothing
      ("not base64", []),
    ] as [(String, [[UInt8]])])
  func binaryDecoding(value: String, expected: [[UInt8]]) {
    let metadata = GRPCMetadata(decodingHeaderFields: [("x-bin", value)])
    #expect(metadata["x-bin"] == expected.map { .binary($0) })
  }

  @Test("commas in ASCII values are not split")
  func asciiCommas() {
    let metadata = GRPCMetadata(decodingHeaderFields: [("x-list", "a, b,c")])
    #expect(metadata["x-list"] == [.string("a, b,c")])
  }

  @Test("binary values round-trip through header fields")
  func binaryRoundTrip() {
    var metadata = GRPCMetadata()
    for length in 0..<20 {
      metadata.add("k\(length)-bin", binary: (0..<length).map { UInt8($0 * 13) })
    }
    metadata.add("plain", "v")
    #expect(GRPCMetadata(decodingHeaderFields: metadata.headerFields) == metadata)
  }

  @Test(
    "valid names",
    arguments: ["a", "x-trip-id", "0", "a.b", "a_b", "abcdefghijklmnopqrstuvwxyz0123456789-_.", "x-bin", "grpc-x"])
  func validNames(name: String) {
    #expect(GRPCMetadata.isValidName(name))
  }

  @Test("invalid names", arguments: ["", "X-Trip", "a b", "a:b", ":path", "a/b", "é", "a\n", "a+b", "a@b"])
  func invalidNames(name: String) {
    #expect(!GRPCMetadata.isValidName(name))
  }

  @Test("ASCII values: every byte from 0x20 to 0x7E is valid, every other byte is not")
  func asciiValues() {
    #expect(GRPCMetadata.isValidASCIIValue(""))
    for byte in UInt8(0)...UInt8(0x7F) {
      let value = String(decoding: [UInt8(ascii: "a"), byte], as: UTF8.self)
      #expect(GRPCMetadata.isValidASCIIValue(value) == (0x20...0x7E).contains(byte), "byte \(byte)")
    }
    #expect(!GRPCMetadata.isValidASCIIValue("é"))
    #expect(!GRPCMetadata.isValidASCIIValue("🚕"))
  }

  @Test(
    "reserved names",
    arguments: [
      ":path", ":authority", "grpc-timeout", "grpc-status", "grpc-anything", "GRPC-Encoding", "te", "TE",
      "content-type", "user-agent", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
      "host",
    ])
  func reserved(name: String) {
    #expect(GRPCMetadata.isReserved(name))
  }

  @Test("unreserved names", arguments: ["authorization", "x-grpc-thing", "grpc", "tee", "content-length-x", "x-te"])
  func unreserved(name: String) {
    #expect(!GRPCMetadata.isReserved(name))
  }
}
