// Sources/JourneySharing/Map/MapGeometry.swift - distances, bearings and polylines on the Earth
//
// Route geometry for the map state: great-circle distances and bearings
// (haversine on a sphere of the IUGG mean radius), projection of a point on a
// segment in a local equirectangular frame (exact enough for segments of a few
// kilometres, which is what road polylines are made of), and a polyline with
// cumulative distances so "where is the point 420 m along the route" is a
// binary search. Interpolation inside a segment is linear in latitude and
// longitude, as map renderers draw a segment. Routes that cross the
// antimeridian or pass over a pole are not handled specially.

import FleetEngineMessages

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Spherical geometry helpers; all distances in meters, angles in degrees.
enum MapGeo {
  /// The mean Earth radius (IUGG), in meters.
  static let earthRadius = 6_371_008.8
  /// Radians per degree.
  static let radiansPerDegree = Double.pi / 180
  /// Meters per degree of latitude (and of longitude at the equator).
  static let metersPerDegree = earthRadius * radiansPerDegree

  /// Whether `point` is a usable WGS84 position: finite, latitude in [-90, 90], longitude in [-180, 180].
  static func isValid(_ point: LatLng) -> Bool {
    point.latitude.isFinite && point.longitude.isFinite && abs(point.latitude) <= 90 && abs(point.longitude) <= 180
  }

  /// `point` without unknown fields, or `nil` when it is not a usable position.
  static func clean(_ point: LatLng?) -> LatLng? {
    guard let point, isValid(point) else { return nil }
    return LatLng(latitude: point.latitude, longitude: point.longitude)
  }

  /// `points` without unknown fields, or `nil` when any of them is not a usable position (a route with a
  /// broken point is not trusted at all: traffic intervals index its points, so none can be dropped).
  static func clean(_ points: [LatLng]) -> [LatLng]? {
    var result: [LatLng] = []
    result.reserveCapacity(points.count)
    for point in points {
      guard isValid(point) else { return nil }
      result.append(LatLng(latitude: point.latitude, longitude: point.longitude))
    }
    return result
  }

  /// A longitude difference folded into [-180, 180].
  static func wrappedLongitudeDelta(_ delta: Double) -> Double {
    if delta > 180 { return delta - 360 }
    if delta < -180 { return delta + 360 }
    return delta
  }

  /// The great-circle distance between `a` and `b` (haversine).
  static func distance(_ a: LatLng, _ b: LatLng) -> Double {
    let phi1 = a.latitude * radiansPerDegree
    let phi2 = b.latitude * radiansPerDegree
    let deltaPhi = phi2 - phi1
    let deltaLambda = wrappedLongitudeDelta(b.longitude - a.longitude) * radiansPerDegree
    let sinPhi = sin(deltaPhi / 2)
    let sinLambda = sin(deltaLambda / 2)
    let h = sinPhi * sinPhi + cos(phi1) * cos(phi2) * sinLambda * sinLambda
    return 2 * earthRadius * asin(min(1, h.squareRoot()))
  }

  /// The initial great-circle bearing from `a` to `b`, in [0, 360); 0 is north, 90 east.
  static func bearing(from a: LatLng, to b: LatLng) -> Double {
    let phi1 = a.latitude * radiansPerDegree
    let phi2 = b.latitude * radiansPerDegree
    let deltaLambda = wrappedLongitudeDelta(b.longitude - a.longitude) * radiansPerDegree
    let y = sin(deltaLambda) * cos(phi2)
    let x = cos(phi1) * sin(phi2) - sin(phi1) * cos(phi2) * cos(deltaLambda)
    return normalizedDegrees(atan2(y, x) / radiansPerDegree)
  }

  /// `degrees` folded into [0, 360).
  static func normalizedDegrees(_ degrees: Double) -> Double {
    var value = degrees.truncatingRemainder(dividingBy: 360)
    if value < 0 { value += 360 }
    // -1e-15 + 360 rounds to 360.
    return value >= 360 ? 0 : value
  }

  /// The point a `fraction` of the way from `a` to `b`, linear in latitude and longitude; exactly `a` at 0 and
  /// exactly `b` at 1.
  static func interpolate(_ a: LatLng, _ b: LatLng, _ fraction: Double) -> LatLng {
    if fraction <= 0 { return a }
    if fraction >= 1 { return b }
    return LatLng(
      latitude: a.latitude + (b.latitude - a.latitude) * fraction,
      longitude: a.longitude + wrappedLongitudeDelta(b.longitude - a.longitude) * fraction)
  }

  /// Where `point` falls on the segment `a`–`b`: the fraction of the way along it of the nearest point of the
  /// segment, and the distance from `point` to that nearest point (meters, local equirectangular frame at `a`).
  static func project(_ point: LatLng, ontoSegmentFrom a: LatLng, to b: LatLng) -> (fraction: Double, offset: Double) {
    let metersPerDegreeLongitude = metersPerDegree * cos(a.latitude * radiansPerDegree)
    let bx = wrappedLongitudeDelta(b.longitude - a.longitude) * metersPerDegreeLongitude
    let by = (b.latitude - a.latitude) * metersPerDegree
    let px = wrappedLongitudeDelta(point.longitude - a.longitude) * metersPerDegreeLongitude
    let py = (point.latitude - a.latitude) * metersPerDegree
    let lengthSquared = bx * bx + by * by
    let fraction = lengthSquared > 0 ? min(max((px * bx + py * by) / lengthSquared, 0), 1) : 0
    let dx = px - fraction * bx
    let dy = py - fraction * by
    return (fraction, (dx * dx + dy * dy).squareRoot())
  }
}

/// Where a point projects on a polyline.
struct MapProjection: Sendable, Hashable {
  /// Meters along the polyline from its first point.
  var distanceAlong: Double
  /// Meters from the point to the polyline.
  var offset: Double
}

/// A polyline with the cumulative great-circle distance at each point.
struct MapPolyline: Sendable, Hashable {
  /// The points, in order.
  let points: [LatLng]
  /// `cumulativeDistances[i]`: meters along the polyline from `points[0]` to `points[i]`.
  let cumulativeDistances: [Double]

  /// The polyline through `points`, which must all be valid positions.
  init(_ points: [LatLng]) {
    self.points = points
    var distances: [Double] = []
    distances.reserveCapacity(points.count)
    var total = 0.0
    for index in points.indices {
      if index > 0 { total += MapGeo.distance(points[index - 1], points[index]) }
      distances.append(total)
    }
    self.cumulativeDistances = distances
  }

  /// The polyline without points.
  static let empty = MapPolyline([])

  /// Whether it has a segment to draw or move along (two points or more).
  var isDrawable: Bool { points.count >= 2 }

  /// The total length in meters.
  var length: Double { cumulativeDistances.last ?? 0 }

  /// The segment holding the point `distance` meters along, and the fraction of the way along it.
  ///
  /// Below 0 it is the start of segment 0; at or beyond the length, the end of the last segment. Otherwise the
  /// segment `k` with `cumulativeDistances[k] <= distance < cumulativeDistances[k + 1]`, so the fraction is
  /// below 1 and zero-length segments are never returned.
  /// - Precondition: ``isDrawable``.
  func locate(_ distance: Double) -> (segment: Int, fraction: Double) {
    let lastSegment = points.count - 2
    guard distance > 0 else { return (0, 0) }
    guard distance < length else { return (lastSegment, 1) }
    // The last k with cumulativeDistances[k] <= distance; k <= lastSegment because distance < length.
    var low = 0
    var high = lastSegment
    while low < high {
      let middle = (low + high + 1) / 2
      if cumulativeDistances[middle] <= distance { low = middle } else { high = middle - 1 }
    }
    let span = cumulativeDistances[low + 1] - cumulativeDistances[low]
    return (low, span > 0 ? (distance - cumulativeDistances[low]) / span : 0)
  }

  /// The point `distance` meters along (clamped to the polyline).
  /// - Precondition: ``isDrawable``.
  func point(at distance: Double) -> LatLng {
    let (segment, fraction) = locate(distance)
    return MapGeo.interpolate(points[segment], points[segment + 1], fraction)
  }

  /// The bearing of the segment `distance` meters along; the nearest segment of non-zero length when that one
  /// has none, and `nil` when no segment has a length.
  func bearing(at distance: Double) -> Double? {
    guard isDrawable, length > 0 else { return nil }
    let (segment, _) = locate(distance)
    var candidate = segment
    while candidate < points.count - 1 {
      if cumulativeDistances[candidate + 1] > cumulativeDistances[candidate] {
        return MapGeo.bearing(from: points[candidate], to: points[candidate + 1])
      }
      candidate += 1
    }
    candidate = segment - 1
    while candidate >= 0 {
      if cumulativeDistances[candidate + 1] > cumulativeDistances[candidate] {
        return MapGeo.bearing(from: points[candidate], to: points[candidate + 1])
      }
      candidate -= 1
    }
    return nil
  }

  /// The points strictly between `start` and `end` meters along, in order.
  func vertices(after start: Double, before end: Double) -> ArraySlice<LatLng> {
    guard end > start, !points.isEmpty else { return [] }
    // First index with cumulativeDistances > start, and first with >= end.
    let first = firstIndex { $0 > start }
    let last = firstIndex { $0 >= end }
    return first < last ? points[first..<last] : []
  }

  /// The first index whose cumulative distance satisfies `predicate` (monotone: false…false true…true), or the
  /// count when none does.
  private func firstIndex(where predicate: (Double) -> Bool) -> Int {
    var low = 0
    var high = cumulativeDistances.count
    while low < high {
      let middle = (low + high) / 2
      if predicate(cumulativeDistances[middle]) { high = middle } else { low = middle + 1 }
    }
    return low
  }

  /// The polyline from `distance` meters along to the end, and the index shift from original to trimmed points.
  ///
  /// The result starts with the point at `distance`, then `points[offset + 1]…`; so original point `i > offset`
  /// is trimmed point `i - offset`, and original segment `offset + j` (for `j >= 1`) is trimmed segment `j`
  /// (trimmed segment 0 is the rest of original segment `offset`). At or below 0 nothing is cut (offset 0); at or
  /// beyond the length only the last point is left.
  func trimmed(from distance: Double) -> (points: [LatLng], offset: Int) {
    guard isDrawable, distance > 0 else { return (points, 0) }
    guard distance < length else { return ([points[points.count - 1]], points.count - 1) }
    let (segment, fraction) = locate(distance)
    var result: [LatLng] = []
    result.reserveCapacity(points.count - segment)
    result.append(MapGeo.interpolate(points[segment], points[segment + 1], fraction))
    result.append(contentsOf: points[(segment + 1)...])
    return (result, segment)
  }

  /// The nearest point of the polyline to `point`, searching segments from `firstSegment` on (ties go to the
  /// earlier segment); `nil` when the polyline has no segment.
  func project(_ point: LatLng, fromSegment firstSegment: Int = 0) -> MapProjection? {
    guard isDrawable else { return nil }
    var best: MapProjection?
    for segment in max(0, min(firstSegment, points.count - 2))..<(points.count - 1) {
      let (fraction, offset) = MapGeo.project(point, ontoSegmentFrom: points[segment], to: points[segment + 1])
      if best.map({ offset < $0.offset }) ?? true {
        let along =
          cumulativeDistances[segment] + fraction * (cumulativeDistances[segment + 1] - cumulativeDistances[segment])
        best = MapProjection(distanceAlong: along, offset: offset)
      }
    }
    return best
  }
}
