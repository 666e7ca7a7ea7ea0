// Tests/FleetEngineMessagesTests/LatLngPathTests.swift - routes stored 16 bytes a point, unknown fields kept

import FleetEngineMessages
import ProtoWire
import Testing

private func points(_ count: Int, from start: Double = 0) -> [LatLng] {
  (0..<count).map { LatLng(latitude: start + Double($0) * 1e-4, longitude: 4.9 + Double($0) * 2e-4) }
}

@Suite("LatLngPath: a repeated LatLng field, 16 bytes a point")
struct LatLngPathTests {
  @Test func aDecodedRouteIsContiguousCoordinatePairsAllocatedOnce() throws {
    #expect(MemoryLayout<LatLngPath.Coordinate>.stride == 16)
    var trip = Trip()
    trip.route = LatLngPath(points(200))
    let decoded = try Trip(serializedBytes: trip.serializedBytes())
    #expect(decoded.route == trip.route)
    #expect(decoded.route.coordinates.count == 200)
    // The run of 200 elements was counted ahead: one reservation of 200, no doubling slack (the allocator may
    // round the block up by a few elements, depending on the thread's arena).
    #expect((200..<208).contains(decoded.route.capacity))
    #expect(!decoded.route.hasUnknownFields)
    #expect(Array(decoded.route) == points(200))
  }

  @Test func unknownFieldsOfAPointSurviveTheRoundTrip() throws {
    var odd = LatLng(latitude: 1, longitude: 2)
    odd.unknownFields = UnknownFields(bytes: [0x18, 0x07])  // field 3, varint 7
    var waypoint = TripWaypoint()
    waypoint.pathToWaypoint = LatLngPath(points(3) + [odd] + points(2, from: 5))
    #expect(waypoint.pathToWaypoint.hasUnknownFields)
    let bytes = waypoint.serializedBytes()
    let decoded = try TripWaypoint(serializedBytes: bytes)
    #expect(decoded.pathToWaypoint[3].unknownFields == odd.unknownFields)
    #expect(decoded.pathToWaypoint[2].unknownFields.isEmpty)
    #expect(decoded.serializedBytes() == bytes)
  }

  @Test func equalityAndEditsAreThoseOfAnArrayOfLatLng() throws {
    var odd = LatLng(latitude: 9, longitude: 9)
    odd.unknownFields = UnknownFields(bytes: [0x18, 0x01])
    var path = LatLngPath(points(5))
    var array = points(5)
    #expect(Array(path) == array)
    path.append(odd)
    array.append(odd)
    path.replaceSubrange(1..<3, with: points(4, from: 7))
    array.replaceSubrange(1..<3, with: points(4, from: 7))
    path[0] = odd
    array[0] = odd
    path.remove(at: 2)
    array.remove(at: 2)
    #expect(Array(path) == array)
    #expect(path == LatLngPath(array))
    #expect(path.hashValue == LatLngPath(array).hashValue)
    // A path holding an (empty) unknown-fields entry per point equals one holding none.
    var plain = LatLngPath(points(3))
    let withEntries = LatLngPath(points(3) + [odd])
    var trimmed = withEntries
    trimmed.removeLast()
    plain.append(contentsOf: [])
    #expect(trimmed == plain)
    #expect(trimmed != withEntries)
    #expect(LatLngPath([LatLng(latitude: .nan, longitude: 0)]) != LatLngPath([LatLng(latitude: .nan, longitude: 0)]))
  }

  @Test func aCopyNobodyChangedSharesStorage() {
    let path = LatLngPath(points(10))
    var copy = path
    #expect(copy.sharesStorage(with: path))
    copy[0] = LatLng(latitude: 0, longitude: 0)
    #expect(!copy.sharesStorage(with: path))
    #expect(copy != path)
  }
}
