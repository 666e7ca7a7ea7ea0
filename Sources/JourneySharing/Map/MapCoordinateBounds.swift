// Sources/JourneySharing/Map/MapCoordinateBounds.swift - a latitude/longitude rectangle for fitting a camera

public import FleetEngineMessages

/// A rectangle of latitudes and longitudes: what a map camera fits (the SDKs' "auto camera",
/// `FIT_ANTICIPATED_ROUTE`).
///
/// Rectangles that cross the antimeridian are not represented: `southwest.longitude` is never greater than
/// `northeast.longitude`.
public struct CoordinateBounds: Sendable, Hashable {
  /// The corner with the smallest latitude and longitude.
  public var southwest: LatLng
  /// The corner with the largest latitude and longitude.
  public var northeast: LatLng

  /// The rectangle with these corners.
  public init(southwest: LatLng, northeast: LatLng) {
    self.southwest = southwest
    self.northeast = northeast
  }

  /// The smallest rectangle holding every point of `points`; `nil` when there are none. Points that are not
  /// finite are skipped.
  public static func fitting(_ points: some Sequence<LatLng>) -> CoordinateBounds? {
    var south = Double.infinity
    var west = Double.infinity
    var north = -Double.infinity
    var east = -Double.infinity
    for point in points where point.latitude.isFinite && point.longitude.isFinite {
      south = min(south, point.latitude)
      north = max(north, point.latitude)
      west = min(west, point.longitude)
      east = max(east, point.longitude)
    }
    guard south <= north, west <= east else { return nil }
    return CoordinateBounds(
      southwest: LatLng(latitude: south, longitude: west), northeast: LatLng(latitude: north, longitude: east))
  }

  /// Whether `point` lies inside or on the edge of the rectangle.
  public func contains(_ point: LatLng) -> Bool {
    point.latitude >= southwest.latitude && point.latitude <= northeast.latitude
      && point.longitude >= southwest.longitude && point.longitude <= northeast.longitude
  }

  /// Whether every point of `points` lies inside or on the edge of the rectangle.
  public func contains(all points: some Sequence<LatLng>) -> Bool {
    points.allSatisfy(contains)
  }

  /// The middle of the rectangle.
  public var center: LatLng {
    LatLng(
      latitude: (southwest.latitude + northeast.latitude) / 2,
      longitude: (southwest.longitude + northeast.longitude) / 2)
  }

  /// The rectangle grown on every side by `fraction` of its height (north and south) and width (east and west),
  /// kept within [-90, 90] × [-180, 180]. A negative or non-finite fraction leaves it as it is.
  public func padded(by fraction: Double) -> CoordinateBounds {
    guard fraction > 0, fraction.isFinite else { return self }
    let latitudePad = (northeast.latitude - southwest.latitude) * fraction
    let longitudePad = (northeast.longitude - southwest.longitude) * fraction
    return CoordinateBounds(
      southwest: LatLng(
        latitude: max(-90, southwest.latitude - latitudePad), longitude: max(-180, southwest.longitude - longitudePad)),
      northeast: LatLng(
        latitude: min(90, northeast.latitude + latitudePad), longitude: min(180, northeast.longitude + longitudePad)))
  }

  /// The rectangle grown around its centre so each side spans at least `degrees` (a single point or a short
  /// straight street still gives a camera something to fit), kept within [-90, 90] × [-180, 180].
  func expanded(toMinimumSpan degrees: Double) -> CoordinateBounds {
    var result = self
    let height = northeast.latitude - southwest.latitude
    if height < degrees {
      let grow = (degrees - height) / 2
      result.southwest.latitude = max(-90, southwest.latitude - grow)
      result.northeast.latitude = min(90, northeast.latitude + grow)
    }
    let width = northeast.longitude - southwest.longitude
    if width < degrees {
      let grow = (degrees - width) / 2
      result.southwest.longitude = max(-180, southwest.longitude - grow)
      result.northeast.longitude = min(180, northeast.longitude + grow)
    }
    return result
  }
}
