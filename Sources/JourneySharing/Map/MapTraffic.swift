// Sources/JourneySharing/Map/MapTraffic.swift - the active route cut by speed reading intervals
//
// A SpeedReadingInterval names polyline points by index: the interval
// [start, end] covers the edges start..<end, that is the points start...end,
// so neighbouring intervals share their boundary point (end is exclusive as an
// edge index, inclusive as a point: the drawn line of one interval ends where
// the next begins, with no gap). Reading `end` as an exclusive point index
// instead draws the same segments: a renderer needs the boundary point to
// join them, and an end one past the last point is clamped. Intervals index
// the untrimmed route, so when the route is trimmed to start at the vehicle
// they are shifted onto the trimmed points. Edges no interval covers get
// NO_DATA; where intervals overlap the one that starts first wins;
// neighbouring runs of the same speed merge. The work is linear in the
// route's length plus n log n in the number of intervals, whatever indices a
// server sends.

import FleetEngineMessages

/// Cuts routes into ``TrafficSegment``s.
enum MapTraffic {
  /// The segments of `route`, a trimmed route whose point `j >= 1` is original point `offset + j` (see
  /// ``MapPolyline/trimmed(from:)``), by `intervals` over the original points. Empty when `route` has fewer than
  /// two points.
  static func segments(of route: [LatLng], offset: Int, intervals: [SpeedReadingInterval]) -> [TrafficSegment] {
    let edgeCount = route.count - 1
    guard edgeCount >= 1 else { return [] }
    // Edge ranges on the trimmed route: original edge offset + j is trimmed edge j (j >= 1), and the rest of
    // original edge `offset` is trimmed edge 0.
    var ranges: [(start: Int, end: Int, speed: TrafficSegment.Speed)] = []
    ranges.reserveCapacity(intervals.count)
    for interval in intervals {
      let start = max(Int(interval.startPolylinePointIndex) - offset, 0)
      let end = min(Int(interval.endPolylinePointIndex) - offset, edgeCount)
      if end > start { ranges.append((start, end, TrafficSegment.Speed(interval.speed))) }
    }
    ranges.sort { $0.start < $1.start }

    var speeds = [TrafficSegment.Speed](repeating: .noData, count: edgeCount)
    var painted = 0  // edges below this one are taken
    for range in ranges where range.end > painted {
      for edge in max(range.start, painted)..<range.end { speeds[edge] = range.speed }
      painted = range.end
    }

    var segments: [TrafficSegment] = []
    var runStart = 0
    for edge in 1...edgeCount where edge == edgeCount || speeds[edge] != speeds[runStart] {
      segments.append(
        TrafficSegment(points: Array(route[runStart...edge]), speed: speeds[runStart], pointRange: runStart...edge))
      runStart = edge
    }
    return segments
  }
}
