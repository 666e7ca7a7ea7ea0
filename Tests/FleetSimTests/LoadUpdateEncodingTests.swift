// Tests/FleetSimTests/LoadUpdateEncodingTests.swift - load mode's direct encoder against the message values

import FleetEngineMessages
import ProtoWire
import Testing

@testable import FleetSim

@Suite("Load mode: the small update written straight from its numbers")
struct LoadUpdateEncodingTests {
  static func encoded(_ fields: LoadUpdateFields) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: fields.encodedSize) { buffer, count in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      fields.encode(to: &writer)
      count = writer.written
    }
  }

  @Test func theBytesAreThoseOfTheMessageValues() throws {
    var generator = SystemRandomNumberGenerator()
    let edges: [LoadUpdateFields] = [
      LoadUpdateFields(
        latitude: 0, longitude: 0, heading: 0, time: Timestamp(seconds: 0), remainingMeters: 0, eta: 0, sequence: 0),
      LoadUpdateFields(
        latitude: -0.0, longitude: 180, heading: -7, time: Timestamp(seconds: 1_750_000_000, nanos: 999_999_999),
        remainingMeters: .max, eta: -1, sequence: .max),
      LoadUpdateFields(
        latitude: 52.37, longitude: 4.89, heading: 359, time: Timestamp(unixTime: 1_750_000_000.25),
        remainingMeters: 1, eta: 1_750_000_600, sequence: 2),
    ]
    let random = (0..<2_000).map { _ in
      LoadUpdateFields(
        latitude: Double.random(in: -90...90, using: &generator),
        longitude: Double.random(in: -180...180, using: &generator),
        heading: Int32.random(in: -400...400, using: &generator),
        time: Timestamp(unixTime: Double.random(in: 0...2_000_000_000, using: &generator)),
        remainingMeters: Int32.random(in: -10...100_000, using: &generator),
        eta: Int64.random(in: -5...2_000_000_000, using: &generator),
        sequence: UInt64.random(in: 0...UInt64.max >> UInt64.random(in: 0...63, using: &generator), using: &generator))
    }
    for fields in edges + random {
      let direct = Self.encoded(fields)
      #expect(direct.count == fields.encodedSize)
      #expect(direct == fields.tripUpdate.serializedBytes(), "\(fields)")
      // And the follower decodes it flat, as a vehicle's progress.
      let flat = try #require(direct.withUnsafeBytes { TripProgressUpdate.decode($0) })
      #expect(flat.sequence == fields.sequence)
      #expect(flat.lastLocation?.location?.latitude.bitPattern == fields.latitude.bitPattern)
    }
  }
}
