// Sources/FleetEngineMessages/LatLngPath.swift - a repeated google.type.LatLng field, 16 bytes a point
//
// Routes and waypoint paths are most of a followed trip's memory: hundreds of points each. As an
// `[LatLng]` every point took 24 bytes (two doubles and its own unknown-fields storage, a reference
// counted on every copy and release). A `LatLngPath` keeps the coordinates as plain pairs of doubles in
// one contiguous buffer, 16 bytes a point with nothing to retain, and the unknown fields of its points in a
// second array that exists only while some point has any (a server never sends them for LatLng in
// practice, but they are kept, as for every other message, so that re-encoding loses nothing).

public import ProtoWire

/// A path of `google.type.LatLng` points (a repeated `LatLng` field such as `Trip.route` or
/// `TripWaypoint.path_to_waypoint`), stored as contiguous coordinate pairs of 16 bytes each.
///
/// A random-access, range-replaceable collection of `LatLng` values: reading a point builds its
/// `LatLng`, and writing one stores its coordinates (and its unknown fields, if it has any). Copies share
/// storage until one of them changes, as arrays do.
public struct LatLngPath: Sendable, Hashable, RandomAccessCollection, MutableCollection, RangeReplaceableCollection,
  ExpressibleByArrayLiteral, WireRepeatedMessageStorage
{
  /// One point's coordinates, in degrees.
  public struct Coordinate: Sendable, Hashable, BitwiseCopyable {
    /// Degrees, in [-90, 90].
    public var latitude: Double
    /// Degrees, in [-180, 180].
    public var longitude: Double

    /// A point at `latitude`, `longitude`.
    @inlinable
    public init(latitude: Double, longitude: Double) {
      self.latitude = latitude
      self.longitude = longitude
    }
  }

  /// The points' coordinates, in order: 16 bytes each, contiguous.
  public private(set) var coordinates: [Coordinate]
  /// Nil while no point has unknown fields; otherwise one entry per point.
  @usableFromInline var unknownFields: [UnknownFields]?

  /// An empty path.
  public init() {
    coordinates = []
    unknownFields = nil
  }

  /// A path of `coordinates` (with no unknown fields).
  public init(coordinates: [Coordinate]) {
    self.coordinates = coordinates
    unknownFields = nil
  }

  /// A path of `points`.
  public init(arrayLiteral points: LatLng...) {
    self.init(points)
  }

  public typealias Index = Int
  public typealias Indices = Range<Int>

  @inlinable public var startIndex: Int { 0 }
  @inlinable public var endIndex: Int { coordinates.count }
  @inlinable public var count: Int { coordinates.count }
  @inlinable public var isEmpty: Bool { coordinates.isEmpty }

  /// The number of points the path can hold without allocating.
  public var capacity: Int { coordinates.capacity }

  /// The point at `index`.
  public subscript(index: Int) -> LatLng {
    get {
      let coordinate = coordinates[index]
      var point = LatLng(latitude: coordinate.latitude, longitude: coordinate.longitude)
      if let unknownFields { point.unknownFields = unknownFields[index] }
      return point
    }
    set {
      coordinates[index] = Coordinate(latitude: newValue.latitude, longitude: newValue.longitude)
      if unknownFields == nil, !newValue.unknownFields.isEmpty { materializeUnknownFields() }
      if unknownFields != nil { unknownFields![index] = newValue.unknownFields }
    }
  }

  /// Whether any point has unknown fields.
  public var hasUnknownFields: Bool { unknownFields?.contains { !$0.isEmpty } ?? false }

  public mutating func reserveCapacity(_ minimumCapacity: Int) {
    coordinates.reserveCapacity(minimumCapacity)
    unknownFields?.reserveCapacity(minimumCapacity)
  }

  /// Appends `point`.
  public mutating func append(_ point: LatLng) {
    if !point.unknownFields.isEmpty && unknownFields == nil { materializeUnknownFields() }
    coordinates.append(Coordinate(latitude: point.latitude, longitude: point.longitude))
    unknownFields?.append(point.unknownFields)
  }

  public mutating func replaceSubrange<C: Collection<LatLng>>(_ range: Range<Int>, with points: C) {
    if unknownFields == nil && points.contains(where: { !$0.unknownFields.isEmpty }) { materializeUnknownFields() }
    coordinates.replaceSubrange(
      range, with: points.lazy.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) })
    unknownFields?.replaceSubrange(range, with: points.lazy.map(\.unknownFields))
  }

  mutating func materializeUnknownFields() {
    unknownFields = Array(repeating: UnknownFields(), count: coordinates.count)
  }

  /// Whether both paths are the same storage (a copy nobody changed): equal without comparing points.
  public func sharesStorage(with other: LatLngPath) -> Bool {
    coordinates.withUnsafeBufferPointer { a in
      other.coordinates.withUnsafeBufferPointer { b in a.count == b.count && a.baseAddress == b.baseAddress }
    } && (unknownFields == nil) == (other.unknownFields == nil)
  }

  // Equal when every point is (coordinates with `==`, unknown fields byte for byte), as arrays of LatLng are.
  public static func == (a: LatLngPath, b: LatLngPath) -> Bool {
    a.coordinates == b.coordinates && a.sameUnknownFields(as: b)
  }

  /// Whether every point has the same unknown fields in both (of equal length).
  func sameUnknownFields(as other: LatLngPath) -> Bool {
    switch (unknownFields, other.unknownFields) {
    case (nil, nil): true
    case (let a?, let b?): a == b
    case (nil, _): !other.hasUnknownFields
    case (_, nil): !hasUnknownFields
    }
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(coordinates)
    if hasUnknownFields, let unknownFields { hasher.combine(unknownFields) }
  }
}

extension LatLngPath: CustomStringConvertible {
  public var description: String { Array(self).description }
}

extension LatLngPath: BitwiseComparable {
  package func isBitwiseEqual(to other: LatLngPath) -> Bool {
    guard coordinates.count == other.coordinates.count else { return false }
    if sharesStorage(with: other) { return true }
    let same = coordinates.withUnsafeBytes { a in
      other.coordinates.withUnsafeBytes { b in a.elementsEqual(b) }
    }
    return same && sameUnknownFields(as: other)
  }
}
