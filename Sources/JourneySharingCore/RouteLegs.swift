// Sources/JourneySharingCore/RouteLegs.swift - the remaining route as a view of the waypoints' paths
//
// The remaining route is the paths of the waypoints after the next one, end to end. Joined into one
// array it was a second copy of those points in every snapshot; as legs it shares their storage (for
// paths sent as lists of points) and costs a few words per leg.

public import FleetEngineMessages

/// A route made of legs end to end (the remaining route: the paths of the waypoints after the next
/// one), read as one collection of points without copying the legs.
public struct RouteLegs: Sendable, Hashable, RandomAccessCollection, CustomStringConvertible {
  /// The legs, in driving order.
  public let legs: [LatLngPath]
  /// Where each leg starts in the whole route; one more entry than `legs`, the last the point count.
  private let starts: [Int]

  /// No legs.
  public init() {
    legs = []
    starts = [0]
  }

  /// The route made of `legs`, end to end.
  public init(legs: [LatLngPath]) {
    var starts = [0]
    starts.reserveCapacity(legs.count + 1)
    for leg in legs { starts.append(starts[starts.count - 1] + leg.count) }
    // Empty legs add nothing: keep only those with points, so that a position finds its leg directly.
    self.legs = legs.allSatisfy { !$0.isEmpty } ? legs : legs.filter { !$0.isEmpty }
    if self.legs.count != legs.count {
      var compact = [0]
      for leg in self.legs { compact.append(compact[compact.count - 1] + leg.count) }
      self.starts = compact
    } else {
      self.starts = starts
    }
  }

  public var startIndex: Int { 0 }
  public var endIndex: Int { starts[starts.count - 1] }

  /// The point at `position` of the whole route.
  public subscript(position: Int) -> LatLng {
    precondition(position >= 0 && position < endIndex, "RouteLegs index out of range")
    // The last leg whose start is at or before `position` (binary search over the starts).
    var low = 0
    var high = legs.count - 1
    while low < high {
      let middle = (low + high + 1) / 2
      if starts[middle] <= position { low = middle } else { high = middle - 1 }
    }
    return legs[low][position - starts[low]]
  }

  /// Whether both are made of the same legs' storage: equal without comparing points.
  package func sharesStorage(with other: RouteLegs) -> Bool {
    legs.count == other.legs.count && zip(legs, other.legs).allSatisfy { $0.sharesStorage(with: $1) }
  }

  /// Equal when they hold the same points in order, however they are cut into legs.
  public static func == (a: RouteLegs, b: RouteLegs) -> Bool {
    a.sharesStorage(with: b) || a.elementsEqual(b)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    for point in self { hasher.combine(point) }
  }

  public var description: String { Array(self).description }
}

extension RouteLegs: BitwiseComparable {
  package func isBitwiseEqual(to other: RouteLegs) -> Bool {
    guard count == other.count else { return false }
    if sharesStorage(with: other) { return true }
    return zip(self, other).allSatisfy { $0.isBitwiseEqual(to: $1) }
  }
}
