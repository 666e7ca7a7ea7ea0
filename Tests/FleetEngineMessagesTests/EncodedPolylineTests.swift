// Tests/FleetEngineMessagesTests/EncodedPolylineTests.swift - Google's encoded polyline format, both ways

import FleetEngineMessages
import Primitives
import Testing

@Suite("EncodedPolyline")
struct EncodedPolylineTests {
  /// The example from Google's format documentation.
  static let documented = [
    LatLng(latitude: 38.5, longitude: -120.2), LatLng(latitude: 40.7, longitude: -120.95),
    LatLng(latitude: 43.252, longitude: -126.453),
  ]

  @Test func documentedExample() throws {
    #expect(EncodedPolyline.encode(Self.documented) == "_p~iF~ps|U_ulLnnqC_mqNvxq`@")
    let decoded = try #require(EncodedPolyline.decode("_p~iF~ps|U_ulLnnqC_mqNvxq`@"))
    #expect(decoded.count == 3)
    for (a, b) in zip(decoded, Self.documented) {
      #expect(abs(a.latitude - b.latitude) < 1e-9 && abs(a.longitude - b.longitude) < 1e-9)
    }
    // A single value from the documentation: -179.9832104 → `` `~oia@ ``.
    #expect(EncodedPolyline.encode([LatLng(latitude: -179.9832104, longitude: 0)]) == "`~oia@?")
  }

  @Test func emptyPolyline() {
    #expect(EncodedPolyline.encode([]) == "")
    #expect(EncodedPolyline.decode("") == [])
  }

  @Test("random points round-trip within half a unit", arguments: [0, 5, 6, 7, 10])
  func randomRoundTrip(precision: Int) throws {
    var random = SplitMix64(seed: UInt64(precision) &+ 42)
    var factor = 1.0
    for _ in 0..<precision { factor *= 10 }
    for _ in 0..<50 {
      let points = (0..<Int.random(in: 1...200, using: &random)).map { _ in
        LatLng(
          latitude: Double.random(in: -90...90, using: &random),
          longitude: Double.random(in: -180...180, using: &random))
      }
      let encoded = EncodedPolyline.encode(points, precision: precision)
      #expect(encoded.utf8.allSatisfy { (63...126).contains($0) })
      let decoded = try #require(EncodedPolyline.decode(encoded, precision: precision))
      #expect(decoded.count == points.count)
      for (a, b) in zip(decoded, points) {
        #expect(abs(a.latitude - b.latitude) <= 0.5 / factor + 1e-12)
        #expect(abs(a.longitude - b.longitude) <= 0.5 / factor + 1e-12)
      }
      // Decoded points are exact at that precision: encoding them again gives the same string.
      #expect(EncodedPolyline.encode(decoded, precision: precision) == encoded)
    }
  }

  @Test func nonFiniteAndHugeCoordinatesStayDecodable() throws {
    let points = [
      LatLng(latitude: .nan, longitude: .infinity), LatLng(latitude: -.infinity, longitude: 1e300),
      LatLng(latitude: -1e300, longitude: 0),
    ]
    let decoded = try #require(EncodedPolyline.decode(EncodedPolyline.encode(points, precision: 10), precision: 10))
    #expect(decoded.count == 3)
    #expect(decoded[0].latitude == 0)
    #expect(decoded[0].longitude == 9_007_199_254_740_992 / 1e10)
    #expect(decoded[1].latitude == -9_007_199_254_740_992 / 1e10)
  }

  @Test(
    "malformed input is rejected",
    arguments: [
      "_p~iF",  // a latitude without its longitude
      "_p~iF~ps|U_",  // a value cut short
      "~",  // only a continuation group
      "_p~iF~ps|U ",  // below '?'
      "_p~iF~ps|U\u{7F}?",  // above '~'
      "é?",  // not ASCII
      String(repeating: "~", count: 12) + "??",  // a value longer than 12 groups
      String(repeating: "~", count: 1000),
    ])
  func malformed(encoded: String) {
    #expect(EncodedPolyline.decode(encoded) == nil)
  }

  @Test func unsupportedPrecisionIsRejected() {
    #expect(EncodedPolyline.decode("??", precision: -1) == nil)
    #expect(EncodedPolyline.decode("??", precision: 11) == nil)
    #expect(EncodedPolyline.decode("??", precision: 10) == [LatLng(latitude: 0, longitude: 0)])
  }

  @Test func overflowingSumIsRejected() {
    // Each value is the most negative 12 groups hold, -2^59; sixteen reach Int64.min, seventeen overflow.
    let big = String(repeating: "~", count: 11) + "^"
    let decodedOnce = EncodedPolyline.decode(big + "?")
    #expect(decodedOnce?.count == 1)
    #expect(EncodedPolyline.decode(String(repeating: big + "?", count: 16))?.last?.latitude == -0x1p63 / 1e5)
    #expect(EncodedPolyline.decode(String(repeating: big + "?", count: 17)) == nil)
  }

  @Test func randomGarbageNeverTraps() {
    var random = SplitMix64(seed: 7)
    var accepted = 0
    for _ in 0..<5_000 {
      let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in
        UInt8.random(in: 32...130, using: &random)
      }
      let text = String(decoding: bytes, as: UTF8.self)
      if let points = EncodedPolyline.decode(text) {
        accepted += 1
        #expect(points.count * 2 <= text.utf8.count)
        #expect(points.count == EncodedPolyline.pointCount(text))
      }
      // Whatever the input, the count bounds what decoding can give.
      #expect((EncodedPolyline.decode(text)?.count ?? 0) <= EncodedPolyline.pointCount(text))
    }
    #expect(accepted > 0)
  }

  @Test("pointCount is exact for encoded polylines and counts without decoding")
  func pointCountMatchesDecoding() {
    var random = SplitMix64(seed: 11)
    for count in [0, 1, 2, 17, 1_000] {
      let points = (0..<count).map { _ in
        LatLng(
          latitude: Double.random(in: -90...90, using: &random),
          longitude: Double.random(in: -180...180, using: &random))
      }
      let encoded = EncodedPolyline.encode(points)
      #expect(EncodedPolyline.pointCount(encoded) == count)
      #expect(EncodedPolyline.decode(encoded)?.count == count)
    }
    // A run of continuation groups holds no value at all: no point, whatever its length.
    #expect(EncodedPolyline.pointCount(String(repeating: "~", count: 100_000)) == 0)
    // A latitude without its longitude still counts (an upper bound for what is malformed).
    #expect(EncodedPolyline.pointCount("?") == 1)
  }

  @Test("maxPoints bounds decoding: at the limit the points come back, one more gives nil")
  func maxPointsBoundsDecoding() {
    let encoded = EncodedPolyline.encode((0..<100).map { LatLng(latitude: Double($0) * 1e-3, longitude: 0) })
    #expect(EncodedPolyline.decode(encoded, maxPoints: 100)?.count == 100)
    #expect(EncodedPolyline.decode(encoded, maxPoints: 99) == nil)
    #expect(EncodedPolyline.decode("", maxPoints: 0) == [])
    // A long malformed input is refused without reserving room for what its length suggests.
    #expect(EncodedPolyline.decode(String(repeating: "~", count: 1 << 20), maxPoints: 10) == nil)
  }
}
