// Sources/JourneySharing/Map/MapGeoJSON.swift - the map state as a GeoJSON FeatureCollection
//
// RFC 7946: positions are [longitude, latitude]; a LineString has two
// positions or more (shorter routes are left out); "bbox" is
// [west, south, east, north] over every position in the collection. Members
// the RFC does not define ("tripName", "tripStatus", "cameraBounds") are
// foreign members, which §6.1 allows. Coordinates are written with up to 7
// decimals (about 1 cm), other numbers with up to 6, trailing zeros dropped;
// a number that is not finite is written as null (JSON has no NaN). A tiny
// writer does the JSON, so no Foundation is needed.

import FleetEngineMessages
import Primitives

extension JourneySharingMapState {
  /// The state as a GeoJSON FeatureCollection (RFC 7946), one line, no whitespace.
  ///
  /// Features, in this order (each only when there is something to show), with `id` and a `kind` property:
  /// - `vehicle` (Point): `heading` (degrees), `speed` (m/s), `lastFix` (Unix seconds), `isRoadSnapped`, `isStale`.
  /// - `pickup`, `intermediateDestination-{i}`, `dropoff` (Point): `eta` (Unix seconds), `distanceMeters`, and for
  ///   intermediate destinations `index` (in the trip's `intermediate_destinations`).
  /// - `traveledRoute`, `remainingRoute`, `remainingRouteAfterNextWaypoint` (LineString).
  /// - `traffic-{i}` (LineString, `kind` `traffic`): one per ``trafficSegments`` entry, with `speed` `NORMAL`,
  ///   `SLOW`, `TRAFFIC_JAM` or `NO_DATA`.
  ///
  /// The collection carries `tripStatus` (the proto name), `bbox` (`[west, south, east, north]` over every
  /// position) and `cameraBounds` (``cameraBounds`` in the same order) when they exist. Unknown values (`nil`)
  /// are left out rather than written as `null`.
  public func geoJSON() -> String {
    MapGeoJSON.encode(self, tripName: nil)
  }
}

/// Writes ``JourneySharingMapState`` as GeoJSON.
enum MapGeoJSON {
  /// Decimals written for coordinates (1e-7 degrees is about 1 cm).
  static let coordinateDigits = 7
  /// Decimals written for other numbers.
  static let valueDigits = 6

  /// The state as a FeatureCollection, with `tripName` as a foreign member when given.
  static func encode(_ state: JourneySharingMapState, tripName: String?) -> String {
    var writer = MapJSONWriter()
    writer.raw("{\"type\":\"FeatureCollection\"")
    if let tripName {
      writer.raw(",\"tripName\":")
      writer.string(tripName)
    }
    writer.raw(",\"tripStatus\":")
    writer.string(state.tripStatus.protoName)

    let lines: [(id: String, points: [LatLng])] = [
      ("traveledRoute", state.traveledRoute),
      ("remainingRoute", state.remainingRoute),
      ("remainingRouteAfterNextWaypoint", state.remainingRouteAfterNextWaypoint),
    ].filter { $0.1.count >= 2 }
    let traffic = state.trafficSegments.filter { $0.points.count >= 2 }

    var everything: [LatLng] = []
    if let vehicle = state.vehicle { everything.append(vehicle.position) }
    everything.append(contentsOf: state.stops.map(\.position))
    for line in lines { everything.append(contentsOf: line.points) }
    if let bbox = CoordinateBounds.fitting(everything) {
      writer.raw(",\"bbox\":")
      writer.bounds(bbox)
    }
    if let camera = state.cameraBounds {
      writer.raw(",\"cameraBounds\":")
      writer.bounds(camera)
    }

    writer.raw(",\"features\":[")
    var first = true
    func separate() {
      if !first { writer.raw(",") }
      first = false
    }
    if let vehicle = state.vehicle {
      separate()
      writer.feature(
        id: "vehicle", point: vehicle.position,
        properties: [
          ("kind", .string("vehicle")), ("heading", vehicle.heading.map(MapJSONValue.number)),
          ("speed", vehicle.speed.map(MapJSONValue.number)), ("lastFix", .number(vehicle.lastFix)),
          ("isRoadSnapped", .bool(vehicle.isRoadSnapped)), ("isStale", .bool(vehicle.isStale)),
        ])
    }
    var intermediateOrdinal = 0
    for stop in state.stops {
      separate()
      let id: String
      switch stop.kind {
      case .pickup: id = "pickup"
      case .dropoff: id = "dropoff"
      case .intermediateDestination:
        id = "intermediateDestination-\(intermediateOrdinal)"
        intermediateOrdinal += 1
      }
      writer.feature(
        id: id, point: stop.position,
        properties: [
          ("kind", .string(stop.kind.rawValue)), ("eta", stop.eta.map(MapJSONValue.number)),
          ("distanceMeters", stop.distanceMeters.map(MapJSONValue.number)),
          ("index", stop.intermediateDestinationIndex.map { .number(Double($0)) }),
        ])
    }
    for line in lines {
      separate()
      writer.feature(id: line.id, line: line.points, properties: [("kind", .string(line.id))])
    }
    for (index, segment) in traffic.enumerated() {
      separate()
      writer.feature(
        id: "traffic-\(index)", line: segment.points,
        properties: [("kind", .string("traffic")), ("speed", .string(segment.speed.rawValue))])
    }
    writer.raw("]}")
    return writer.output
  }
}

/// A JSON value the GeoJSON writer puts in `properties`.
enum MapJSONValue {
  /// A string, escaped when written.
  case string(String)
  /// A number, written with up to ``MapGeoJSON/valueDigits`` decimals (`null` when not finite).
  case number(Double)
  /// `true` or `false`.
  case bool(Bool)
}

/// A minimal JSON writer: strings escaped per RFC 8259, numbers finite and in plain decimal notation.
struct MapJSONWriter {
  /// What has been written so far.
  private(set) var output = ""

  /// Appends `text` as it is (it must already be JSON).
  mutating func raw(_ text: String) {
    output += text
  }

  /// Appends `value` as a JSON string: quotes, backslashes and control characters escaped, and U+2028/U+2029
  /// too so the output is also a valid JavaScript literal.
  mutating func string(_ value: String) {
    JSONString.append(value, to: &output)
  }

  /// Appends `value` with at most `maxFractionDigits` decimals, or `null` when it is not finite.
  mutating func number(_ value: Double, maxFractionDigits: Int = MapGeoJSON.valueDigits) {
    output += Self.format(value, maxFractionDigits: maxFractionDigits) ?? "null"
  }

  /// Appends a property value.
  mutating func value(_ value: MapJSONValue) {
    switch value {
    case .string(let text): string(text)
    case .number(let number): self.number(number)
    case .bool(let flag): output += flag ? "true" : "false"
    }
  }

  /// Appends a GeoJSON position, `[longitude,latitude]`.
  mutating func position(_ point: LatLng) {
    output += "["
    number(point.longitude, maxFractionDigits: MapGeoJSON.coordinateDigits)
    output += ","
    number(point.latitude, maxFractionDigits: MapGeoJSON.coordinateDigits)
    output += "]"
  }

  /// Appends a GeoJSON bounding box, `[west,south,east,north]`.
  mutating func bounds(_ bounds: CoordinateBounds) {
    output += "["
    number(bounds.southwest.longitude, maxFractionDigits: MapGeoJSON.coordinateDigits)
    output += ","
    number(bounds.southwest.latitude, maxFractionDigits: MapGeoJSON.coordinateDigits)
    output += ","
    number(bounds.northeast.longitude, maxFractionDigits: MapGeoJSON.coordinateDigits)
    output += ","
    number(bounds.northeast.latitude, maxFractionDigits: MapGeoJSON.coordinateDigits)
    output += "]"
  }

  /// Appends a Point feature.
  mutating func feature(id: String, point: LatLng, properties: [(String, MapJSONValue?)]) {
    featureHead(id: id)
    output += "{\"type\":\"Point\",\"coordinates\":"
    position(point)
    output += "}"
    featureTail(properties)
  }

  /// Appends a LineString feature.
  mutating func feature(id: String, line: [LatLng], properties: [(String, MapJSONValue?)]) {
    featureHead(id: id)
    output += "{\"type\":\"LineString\",\"coordinates\":["
    for (index, point) in line.enumerated() {
      if index > 0 { output += "," }
      position(point)
    }
    output += "]}"
    featureTail(properties)
  }

  private mutating func featureHead(id: String) {
    output += "{\"type\":\"Feature\",\"id\":"
    string(id)
    output += ",\"geometry\":"
  }

  /// Closes a feature with its properties; `nil` values are left out.
  private mutating func featureTail(_ properties: [(String, MapJSONValue?)]) {
    output += ",\"properties\":{"
    var first = true
    for (key, value) in properties {
      guard let value else { continue }
      if !first { output += "," }
      first = false
      string(key)
      output += ":"
      self.value(value)
    }
    output += "}}"
  }

  /// `value` in plain decimal notation with at most `maxFractionDigits` (0…15) decimals and no trailing zeros;
  /// `nil` when it is not finite. Magnitudes too large for exact digits fall back to Swift's shortest
  /// round-trip form, which is valid JSON too (for example `1e+20`).
  static func format(_ value: Double, maxFractionDigits: Int) -> String? {
    guard value.isFinite else { return nil }
    let digits = min(max(maxFractionDigits, 0), 15)
    var scale: UInt64 = 1
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * Double(scale)).rounded()
    // Below 2^53 every integer is exact, so the digits below are the rounded value's.
    guard scaled < 9_007_199_254_740_992 else { return "\(value)" }
    let units = UInt64(scaled)
    guard units != 0 else { return "0" }  // also turns -0.0 and tiny negatives into 0
    var text = value < 0 ? "-" : ""
    text += String(units / scale)
    var fraction = units % scale
    if fraction != 0 {
      var width = digits
      while fraction % 10 == 0 {
        fraction /= 10
        width -= 1
      }
      let fractionDigits = String(fraction)
      text += "." + String(repeating: "0", count: width - fractionDigits.count) + fractionDigits
    }
    return text
  }

}
