// Tests/JourneySharingTests/MapTestSupport.swift - trips, routes and a strict JSON reader for the map tests

import FleetEngineMessages
import JourneySharing

// MARK: - Geometry

/// Meters per degree of latitude on the sphere the map code uses (radius 6,371,008.8 m).
let mapTestMetersPerDegree = 6_371_008.8 * Double.pi / 180

/// A point given in units of 1e-5 degrees, so it is exactly what a decoded encoded polyline gives.
func mapTestPoint(_ latitudeE5: Int, _ longitudeE5: Int) -> LatLng {
  LatLng(latitude: Double(latitudeE5) / 100_000, longitude: Double(longitudeE5) / 100_000)
}

/// `count` points going north from (37.00000, -122.00000), 0.001° (about 111.2 m) apart.
func mapTestNorthRoute(count: Int) -> [LatLng] {
  (0..<count).map { mapTestPoint(3_700_000 + 100 * $0, -12_200_000) }
}

/// An approximate ground distance in meters (local equirectangular), good to centimetres over a few kilometres.
func mapTestDistance(_ a: LatLng, _ b: LatLng) -> Double {
  let meanLatitude = (a.latitude + b.latitude) / 2 * Double.pi / 180
  // cos by its Taylor series is plenty for a test helper and keeps it free of libm.
  var cosine = 1.0
  var term = 1.0
  for n in 1..<12 {
    term *= -meanLatitude * meanLatitude / Double((2 * n - 1) * (2 * n))
    cosine += term
  }
  let dx = (b.longitude - a.longitude) * mapTestMetersPerDegree * cosine
  let dy = (b.latitude - a.latitude) * mapTestMetersPerDegree
  return (dx * dx + dy * dy).squareRoot()
}

// MARK: - Trips

/// A speed reading interval.
func mapTestInterval(_ start: Int32, _ end: Int32, _ speed: SpeedReadingInterval.Speed) -> SpeedReadingInterval {
  var interval = SpeedReadingInterval()
  interval.startPolylinePointIndex = start
  interval.endPolylinePointIndex = end
  interval.speed = speed
  return interval
}

/// A remaining waypoint.
func mapTestWaypoint(
  tripID: String = "trip-1", type: WaypointType, at point: LatLng, path: [LatLng] = [], distance: Int32? = nil,
  eta: Int64? = nil
) -> TripWaypoint {
  var waypoint = TripWaypoint()
  var location = TerminalLocation()
  location.point = point
  waypoint.location = location
  waypoint.tripId = tripID
  waypoint.waypointType = type
  waypoint.pathToWaypoint = LatLngPath(path)
  waypoint.distanceMeters = distance.map(Int32Value.init)
  waypoint.eta = eta.map { Timestamp(seconds: $0) }
  return waypoint
}

/// A vehicle location reported at `time`.
func mapTestLocation(
  _ point: LatLng, time: Double, speed: Double? = nil, heading: Int32? = nil, snapped: Bool = true
) -> VehicleLocation {
  var location = VehicleLocation()
  location.location = point
  location.updateTime = Timestamp(unixTime: time)
  location.speed = speed.map(DoubleValue.init)
  location.heading = heading.map(Int32Value.init)
  location.isRoadSnapped = BoolValue(snapped)
  return location
}

/// The name of the map tests' trip.
let mapTestTripName = "providers/acme/trips/trip-1"

/// Trip `trip-1` on its way to the pickup along `route` (as a LatLng list), the vehicle at `vehicle`.
func mapTestTrip(
  route: [LatLng], vehicle: VehicleLocation? = nil, status: TripStatus = .enrouteToPickup,
  waypoints: [TripWaypoint]? = nil, traffic: [SpeedReadingInterval] = []
) -> Trip {
  var trip = Trip()
  trip.name = mapTestTripName
  trip.vehicleId = "vehicle-1"
  trip.tripStatus = status
  trip.route = LatLngPath(route)
  trip.lastLocation = vehicle
  if !traffic.isEmpty {
    var polyline = ConsumableTrafficPolyline()
    polyline.speedReadingInterval = traffic
    trip.currentRouteSegmentTraffic = polyline
  }
  if let last = route.last {
    trip.remainingWaypoints = waypoints ?? [mapTestWaypoint(type: .pickupWaypointType, at: last, path: route)]
  }
  return trip
}

/// How far north of the route's first point `point` is, in meters along the meridian.
func mapTestNorthOffset(_ point: LatLng) -> Double {
  (point.latitude - 37) * mapTestMetersPerDegree
}

// MARK: - A strict JSON reader (RFC 8259)

/// A parsed JSON value; objects keep their members in order.
indirect enum MapTestJSON: Equatable {
  case object([(key: String, value: MapTestJSON)])
  case array([MapTestJSON])
  case string(String)
  case number(Double)
  case bool(Bool)
  case null

  static func == (lhs: MapTestJSON, rhs: MapTestJSON) -> Bool {
    switch (lhs, rhs) {
    case (.object(let a), .object(let b)):
      a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    case (.array(let a), .array(let b)): a == b
    case (.string(let a), .string(let b)): a == b
    case (.number(let a), .number(let b)): a == b
    case (.bool(let a), .bool(let b)): a == b
    case (.null, .null): true
    default: false
    }
  }

  /// The member `key` of an object.
  subscript(key: String) -> MapTestJSON? {
    guard case .object(let members) = self else { return nil }
    return members.first { $0.key == key }?.value
  }

  /// The elements of an array.
  var elements: [MapTestJSON]? {
    guard case .array(let values) = self else { return nil }
    return values
  }

  /// The elements of an array of numbers; `nil` unless every element is a number.
  var numbers: [Double]? {
    guard let values = elements else { return nil }
    let numbers = values.compactMap(\.number)
    return numbers.count == values.count ? numbers : nil
  }

  /// The value of a number.
  var number: Double? {
    guard case .number(let value) = self else { return nil }
    return value
  }

  /// The value of a string.
  var string: String? {
    guard case .string(let value) = self else { return nil }
    return value
  }

  /// The keys of an object, in order.
  var keys: [String]? {
    guard case .object(let members) = self else { return nil }
    return members.map(\.key)
  }

  /// Parses `text` as exactly one JSON value (surrounding whitespace allowed); `nil` when it is not valid JSON
  /// or an object repeats a key.
  static func parse(_ text: String) -> MapTestJSON? {
    var reader = MapTestJSONReader(bytes: Array(text.utf8))
    guard let value = reader.value() else { return nil }
    reader.skipWhitespace()
    return reader.index == reader.bytes.count ? value : nil
  }
}

/// The recursive-descent reader behind ``MapTestJSON/parse(_:)``.
struct MapTestJSONReader {
  let bytes: [UInt8]
  var index = 0
  var depth = 0

  init(bytes: [UInt8]) { self.bytes = bytes }

  mutating func skipWhitespace() {
    while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
  }

  mutating func value() -> MapTestJSON? {
    skipWhitespace()
    guard index < bytes.count, depth < 64 else { return nil }
    switch bytes[index] {
    case UInt8(ascii: "{"): return object()
    case UInt8(ascii: "["): return array()
    case UInt8(ascii: "\""): return string().map(MapTestJSON.string)
    case UInt8(ascii: "t"): return literal("true", .bool(true))
    case UInt8(ascii: "f"): return literal("false", .bool(false))
    case UInt8(ascii: "n"): return literal("null", .null)
    default: return number()
    }
  }

  mutating func literal(_ word: String, _ result: MapTestJSON) -> MapTestJSON? {
    let wordBytes = Array(word.utf8)
    guard index + wordBytes.count <= bytes.count, Array(bytes[index..<(index + wordBytes.count)]) == wordBytes else {
      return nil
    }
    index += wordBytes.count
    return result
  }

  mutating func object() -> MapTestJSON? {
    index += 1
    depth += 1
    defer { depth -= 1 }
    var members: [(key: String, value: MapTestJSON)] = []
    skipWhitespace()
    if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
      index += 1
      return .object(members)
    }
    while true {
      skipWhitespace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
      guard !members.contains(where: { $0.key == key }) else { return nil }
      skipWhitespace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
      index += 1
      guard let member = value() else { return nil }
      members.append((key, member))
      skipWhitespace()
      guard index < bytes.count else { return nil }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "}") {
        index += 1
        return .object(members)
      } else {
        return nil
      }
    }
  }

  mutating func array() -> MapTestJSON? {
    index += 1
    depth += 1
    defer { depth -= 1 }
    var values: [MapTestJSON] = []
    skipWhitespace()
    if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
      index += 1
      return .array(values)
    }
    while true {
      guard let element = value() else { return nil }
      values.append(element)
      skipWhitespace()
      guard index < bytes.count else { return nil }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "]") {
        index += 1
        return .array(values)
      } else {
        return nil
      }
    }
  }

  mutating func hex4() -> UInt32? {
    guard index + 4 <= bytes.count else { return nil }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: return nil
      }
      value = value << 4 | UInt32(digit)
      index += 1
    }
    return value
  }

  mutating func string() -> String? {
    index += 1
    var scalars = String.UnicodeScalarView()
    var raw: [UInt8] = []
    func flush() -> Bool {
      guard !raw.isEmpty else { return true }
      guard let text = String(validating: raw, as: UTF8.self) else { return false }
      scalars.append(contentsOf: text.unicodeScalars)
      raw = []
      return true
    }
    while index < bytes.count {
      let byte = bytes[index]
      index += 1
      switch byte {
      case UInt8(ascii: "\""):
        guard flush() else { return nil }
        return String(scalars)
      case 0..<0x20:
        return nil  // control characters must be escaped
      case UInt8(ascii: "\\"):
        guard flush(), index < bytes.count else { return nil }
        let escape = bytes[index]
        index += 1
        switch escape {
        case UInt8(ascii: "\""): scalars.append("\"")
        case UInt8(ascii: "\\"): scalars.append("\\")
        case UInt8(ascii: "/"): scalars.append("/")
        case UInt8(ascii: "b"): scalars.append("\u{08}")
        case UInt8(ascii: "f"): scalars.append("\u{0C}")
        case UInt8(ascii: "n"): scalars.append("\n")
        case UInt8(ascii: "r"): scalars.append("\r")
        case UInt8(ascii: "t"): scalars.append("\t")
        case UInt8(ascii: "u"):
          guard var code = hex4() else { return nil }
          if (0xD800..<0xDC00).contains(code) {
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { return nil }
            index += 2
            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
          }
          guard let scalar = Unicode.Scalar(code) else { return nil }
          scalars.append(scalar)
        default:
          return nil
        }
      default:
        raw.append(byte)
      }
    }
    return nil
  }

  /// A number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  mutating func number() -> MapTestJSON? {
    let start = index
    func digits() -> Int {
      let first = index
      while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
      return index - first
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard index < bytes.count else { return nil }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
    } else {
      guard digits() > 0 else { return nil }
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      guard digits() > 0 else { return nil }
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
      index += 1
      if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
      guard digits() > 0 else { return nil }
    }
    guard let text = String(validating: bytes[start..<index], as: UTF8.self), let value = Double(text) else {
      return nil
    }
    return .number(value)
  }
}
