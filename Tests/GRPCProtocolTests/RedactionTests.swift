// Tests/GRPCProtocolTests/RedactionTests.swift - credentials never show when metadata is printed

import Foundation
import Testing

@testable import GRPCProtocol

@Suite("Printing metadata without credentials")
struct RedactionTests {
  static let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyaWRlciJ9.c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw"

  /// Every way a value holding `metadata` is commonly turned into text.
  static func renderings(_ value: Any) -> [String] {
    var dumped = ""
    dump(value, to: &dumped)
    return ["\(value)", String(describing: value), String(reflecting: value), dumped]
  }

  @Test(
    "authorization and the other credential names are redacted in description, debugDescription, dump and CallOptions")
  func credentialsAreRedacted() {
    let sensitive = [
      "authorization", "Authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-goog-api-key",
      "x-goog-iam-authorization-token",
    ]
    for name in sensitive {
      var metadata: GRPCMetadata = ["x-trip": "trip-7"]
      metadata.add(name, "Bearer " + Self.token)
      #expect(GRPCMetadata.isSensitive(name))
      let options = CallOptions(metadata: metadata)
      let head = GRPCRequestHead(
        path: "/a.B/C", authority: "example.com", scheme: "https", timeout: nil, metadata: metadata)
      for text in Self.renderings(metadata) + Self.renderings(options) + Self.renderings(head) {
        #expect(!text.contains(Self.token), "\(name): \(text)")
        #expect(!text.contains("c2lnbmF0dXJl"), "\(name): \(text)")
      }
      #expect(metadata.description.contains("<redacted>"))
      #expect(metadata.description.contains("trip-7"))
      // Reading the value is unaffected.
      #expect(metadata.first(name) == "Bearer " + Self.token)
    }
    #expect(!GRPCMetadata.isSensitive("x-trip"))
  }

  @Test("ordinary values print in order; binary values as their length")
  func ordinaryValues() {
    var metadata: GRPCMetadata = ["x-a": "1", "x-b": "two"]
    metadata.add("x-trace-bin", binary: [1, 2, 3])
    #expect(metadata.description == #"["x-a": "1", "x-b": "two", "x-trace-bin": <3 bytes>]"#)
    #expect(GRPCMetadata().description == "[:]")
  }

  @Test("GRPCError's texts hold neither the request metadata nor sensitive trailers")
  func errorTexts() {
    var trailers: GRPCMetadata = ["x-detail": "d"]
    trailers.add("set-cookie", "session=" + Self.token)
    let error = GRPCError(code: .unauthenticated, message: "invalid token", trailers: trailers)
    let bridged = error as NSError
    for text in Self.renderings(error) + [bridged.description, bridged.localizedDescription, "\(bridged.userInfo)"] {
      #expect(!text.contains(Self.token), "\(text)")
    }
  }
}
