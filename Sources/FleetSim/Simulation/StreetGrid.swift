// Sources/FleetSim/Simulation/StreetGrid.swift - the simulated city's streets, and routes along them
//
// A street grid rather than straight lines or random walks, so routes look like
// a city's: straight runs along streets, right-angle turns at intersections,
// blocks of uneven size, some faster avenues. The grid is slightly rotated so
// streets do not run exactly north–south (headings are not all multiples of 90°).
//
// Geometry happens in a local metric frame (u, v) aligned with the grid and
// centred on the city centre. Routing uses the straight grid; the points of a
// route are then bent by a gentle smooth warp (streets wander by 10–30 m over
// half a kilometre or more, so a street's heading drifts by a few degrees like a
// real one's), and become latitude/longitude only at the end (equirectangular
// projection, exact enough within a few kilometres).

import FleetEngineMessages
import Primitives

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A point in the grid's metric frame: `u` along the grid's "east–west" streets, `v` across them.
struct GridPoint: Hashable {
  var u: Double
  var v: Double
}

/// A point on a street, between two consecutive intersections.
struct StreetPoint: Hashable {
  /// Whether the street is one of the lines `v = ys[line]` (else `u = xs[line]`).
  var horizontal: Bool
  /// The street: an index into `ys` (horizontal) or `xs` (vertical).
  var line: Int
  /// The block: between cross streets `segment` and `segment + 1`.
  var segment: Int
  /// Where in the block, 0 at cross street `segment`, 1 at `segment + 1`.
  var fraction: Double
}

/// An intersection: vertical street `i` (`u = xs[i]`) crossing horizontal street `j` (`v = ys[j]`).
struct Intersection: Hashable {
  var i: Int
  var j: Int

  /// The number of blocks between two intersections along the grid.
  func gridDistance(to other: Intersection) -> Int { abs(i - other.i) + abs(j - other.j) }
}

/// One straight piece of a route, along one street.
struct RouteRun {
  var from: GridPoint
  var to: GridPoint
  /// Whether the street it follows is an avenue (faster).
  var arterial: Bool
}

/// The city: street positions, which streets are avenues, the grid's rotation and the projection.
struct StreetGrid: Sendable {
  /// Positions (m) of the vertical streets along u, ascending.
  let xs: [Double]
  /// Positions (m) of the horizontal streets along v, ascending.
  let ys: [Double]
  /// Whether vertical street `i` is an avenue.
  let arterialX: [Bool]
  /// Whether horizontal street `j` is an avenue.
  let arterialY: [Bool]
  /// The grid's rotation from true north, as cosine and sine.
  let cosRotation: Double
  let sinRotation: Double
  /// The warp: u moves by `amplitude.u * sin(v / wavelength.u + phase.u)`, v likewise with u.
  let warpAmplitude: GridPoint
  let warpWavelength: GridPoint
  let warpPhase: GridPoint
  let center: LatLng
  let metersPerDegreeLatitude: Double
  let metersPerDegreeLongitude: Double

  /// Half the grid's extent (m): streets reach this far from the centre along both axes.
  static let halfExtent = 4_000.0

  /// The grid of `seed`, around `center`.
  init(seed: UInt64, center: LatLng) {
    var random = SimulationRandom(seed: seed, stream: 0xC17E_57EE_7000_0000)
    self.center = center
    // Mean Earth radius; the projection error is far below a metre within the grid.
    metersPerDegreeLatitude = 6_371_008.8 * Double.pi / 180
    metersPerDegreeLongitude = metersPerDegreeLatitude * cos(center.latitude * Double.pi / 180)
    // 5°–20° either way: visibly not north-aligned, still clearly a grid.
    let degrees = random.uniform(5, 20) * (random.chance(0.5) ? 1 : -1)
    cosRotation = cos(degrees * Double.pi / 180)
    sinRotation = sin(degrees * Double.pi / 180)
    (xs, arterialX) = Self.streetLines(&random)
    (ys, arterialY) = Self.streetLines(&random)
    warpAmplitude = GridPoint(u: random.uniform(10, 30), v: random.uniform(10, 30))
    // Stored divided by 2π, so that sin(x / wavelength) repeats every 500–1500 m.
    warpWavelength = GridPoint(
      u: random.uniform(500, 1_500) / (2 * Double.pi), v: random.uniform(500, 1_500) / (2 * Double.pi))
    warpPhase = GridPoint(u: random.uniform(0, 2 * Double.pi), v: random.uniform(0, 2 * Double.pi))
  }

  /// Street positions across the extent, blocks 100–200 m, every fourth to sixth street an avenue.
  private static func streetLines(_ random: inout SimulationRandom) -> ([Double], [Bool]) {
    var positive: [Double] = []
    var position = random.uniform(-100, 0)
    while position <= halfExtent {
      positive.append(position)
      position += random.uniform(100, 200)
    }
    var negative: [Double] = []
    position = positive[0] - random.uniform(100, 200)
    while position >= -halfExtent {
      negative.append(position)
      position -= random.uniform(100, 200)
    }
    let lines = negative.reversed() + positive
    let spacing = random.integer(4, 6)
    let phase = random.integer(0, spacing - 1)
    return (lines, lines.indices.map { $0 % spacing == phase })
  }

  // MARK: - Projection

  /// Where a point of the straight grid lies on the city's gently bent streets. Smooth and close to the
  /// identity (slopes under 0.4), so straight runs become slight curves and right angles stay near-right.
  func warped(_ point: GridPoint) -> GridPoint {
    GridPoint(
      u: point.u + warpAmplitude.u * sin(point.v / warpWavelength.u + warpPhase.u),
      v: point.v + warpAmplitude.v * sin(point.u / warpWavelength.v + warpPhase.v))
  }

  /// The position of a (warped) grid point.
  func latLng(_ point: GridPoint) -> LatLng {
    let east = point.u * cosRotation - point.v * sinRotation
    let north = point.u * sinRotation + point.v * cosRotation
    return LatLng(
      latitude: center.latitude + north / metersPerDegreeLatitude,
      longitude: center.longitude + east / metersPerDegreeLongitude)
  }

  /// The compass heading (degrees clockwise from north, 0–359) of travel from `a` to `b`.
  func heading(from a: GridPoint, to b: GridPoint) -> Int32 {
    let du = b.u - a.u
    let dv = b.v - a.v
    let east = du * cosRotation - dv * sinRotation
    let north = du * sinRotation + dv * cosRotation
    var degrees = atan2(east, north) * 180 / Double.pi
    if degrees < 0 { degrees += 360 }
    return Int32(degrees.rounded()) % 360
  }

  // MARK: - Streets

  /// Where an intersection is, on the straight grid.
  func point(_ intersection: Intersection) -> GridPoint {
    GridPoint(u: xs[intersection.i], v: ys[intersection.j])
  }

  /// Where a street point is, on the straight grid.
  func point(_ street: StreetPoint) -> GridPoint {
    if street.horizontal {
      let u0 = xs[street.segment]
      return GridPoint(u: u0 + (xs[street.segment + 1] - u0) * street.fraction, v: ys[street.line])
    } else {
      let v0 = ys[street.segment]
      return GridPoint(u: xs[street.line], v: v0 + (ys[street.segment + 1] - v0) * street.fraction)
    }
  }

  /// The two intersections that bound the block `street` is on.
  func ends(of street: StreetPoint) -> (Intersection, Intersection) {
    street.horizontal
      ? (Intersection(i: street.segment, j: street.line), Intersection(i: street.segment + 1, j: street.line))
      : (Intersection(i: street.line, j: street.segment), Intersection(i: street.line, j: street.segment + 1))
  }

  /// Whether the street a point is on is an avenue.
  func isArterial(_ street: StreetPoint) -> Bool {
    street.horizontal ? arterialY[street.line] : arterialX[street.line]
  }

  /// A mid-block point on a street near `target`: on a horizontal or vertical street as `horizontal`
  /// says, never in the outermost blocks (so routes stay inside the grid), away from the corners.
  func streetPoint(near target: GridPoint, horizontal: Bool, random: inout SimulationRandom) -> StreetPoint {
    let (along, across) = horizontal ? (xs, ys) : (ys, xs)
    let (a, c) = horizontal ? (target.u, target.v) : (target.v, target.u)
    let line = Self.nearestIndex(across, to: c, inset: 1)
    var segment = Self.nearestIndex(along, to: a, inset: 1)
    if along[segment] > a { segment -= 1 }
    segment = min(max(segment, 1), along.count - 3)
    let fraction = min(max((a - along[segment]) / (along[segment + 1] - along[segment]), 0.2), 0.8)
    // A little spread so stops on the same block do not coincide.
    let jittered = min(max(fraction + random.uniform(-0.05, 0.05), 0.15), 0.85)
    return StreetPoint(horizontal: horizontal, line: line, segment: segment, fraction: jittered)
  }

  /// The index of the value in `lines` nearest to `value`, at least `inset` from either end.
  private static func nearestIndex(_ lines: [Double], to value: Double, inset: Int) -> Int {
    var low = 0
    var high = lines.count - 1
    while low < high {
      let mid = (low + high) / 2
      if lines[mid] < value { low = mid + 1 } else { high = mid }
    }
    var best = low
    if low > 0, abs(lines[low - 1] - value) < abs(lines[low] - value) { best = low - 1 }
    return min(max(best, inset), lines.count - 1 - inset)
  }

  // MARK: - Routing

  /// A route from `start` to `end` along streets, as straight runs.
  ///
  /// The vehicle leaves `start`'s block by the end nearer to `end`'s block, follows a
  /// monotone staircase of 1–6 turns between the two blocks, and enters `end`'s block by
  /// its nearer end. Choosing the nearer ends (their grid distances always differ by one)
  /// guarantees the staircase never drives back over either block: no U-turns, no
  /// passing the destination and coming back.
  func route(from start: StreetPoint, to end: StreetPoint, random: inout SimulationRandom) -> [RouteRun] {
    let startPoint = point(start)
    let endPoint = point(end)
    if start.horizontal == end.horizontal, start.line == end.line, start.segment == end.segment {
      return [RouteRun(from: startPoint, to: endPoint, arterial: isArterial(start))]
    }
    let (a0, a1) = ends(of: start)
    let (b0, b1) = ends(of: end)
    var exit = a0
    var entry = b0
    var best = Int.max
    for a in [a0, a1] {
      for b in [b0, b1] where a.gridDistance(to: b) < best {
        best = a.gridDistance(to: b)
        exit = a
        entry = b
      }
    }
    var corners = [exit]
    corners.append(contentsOf: staircase(from: exit, to: entry, random: &random))
    var points = [startPoint]
    for corner in corners where point(corner) != points[points.count - 1] {
      points.append(point(corner))
    }
    if endPoint != points[points.count - 1] { points.append(endPoint) }
    var runs: [RouteRun] = []
    for index in points.indices.dropLast() {
      var run = RouteRun(from: points[index], to: points[index + 1], arterial: false)
      run.arterial = arterial(of: run)
      runs.append(run)
    }
    return mergeCollinear(runs)
  }

  /// Whether the street a run follows is an avenue.
  private func arterial(of run: RouteRun) -> Bool {
    if run.from.v == run.to.v, let j = ys.firstIndex(of: run.from.v) { return arterialY[j] }
    if run.from.u == run.to.u, let i = xs.firstIndex(of: run.from.u) { return arterialX[i] }
    return false
  }

  /// The intersections after `from` on a monotone path to `to`, one per corner, ending with `to`.
  private func staircase(from: Intersection, to: Intersection, random: inout SimulationRandom) -> [Intersection] {
    let di = to.i - from.i
    let dj = to.j - from.j
    if di == 0 && dj == 0 { return [] }
    if di == 0 || dj == 0 { return [to] }
    // Alternate axes; 2–6 runs, as the distances allow.
    let startsAlongI = random.chance(0.5)
    let wanted = random.integer(2, 6)
    var runsI = startsAlongI ? (wanted + 1) / 2 : wanted / 2
    var runsJ = wanted - runsI
    runsI = min(max(runsI, 1), abs(di))
    runsJ = min(max(runsJ, 1), abs(dj))
    // Alternation needs the run counts to differ by at most one, the first axis having the extra.
    if startsAlongI {
      runsI = min(runsI, runsJ + 1)
      runsJ = min(runsJ, runsI)
    } else {
      runsJ = min(runsJ, runsI + 1)
      runsI = min(runsI, runsJ)
    }
    let stepsI = Self.split(abs(di), into: runsI, random: &random)
    let stepsJ = Self.split(abs(dj), into: runsJ, random: &random)
    var corners: [Intersection] = []
    var current = from
    var nextI = 0
    var nextJ = 0
    var alongI = startsAlongI
    while nextI < stepsI.count || nextJ < stepsJ.count {
      if alongI, nextI < stepsI.count {
        current.i += di.signum() * stepsI[nextI]
        nextI += 1
        corners.append(current)
      } else if !alongI, nextJ < stepsJ.count {
        current.j += dj.signum() * stepsJ[nextJ]
        nextJ += 1
        corners.append(current)
      }
      alongI.toggle()
    }
    return corners
  }

  /// `total` split into `parts` positive integers, at random.
  private static func split(_ total: Int, into parts: Int, random: inout SimulationRandom) -> [Int] {
    var cuts: [Int] = []
    while cuts.count < parts - 1 {
      let cut = random.integer(1, total - 1)
      if !cuts.contains(cut) { cuts.append(cut) }
    }
    cuts.sort()
    var result: [Int] = []
    var previous = 0
    for cut in cuts + [total] {
      result.append(cut - previous)
      previous = cut
    }
    return result
  }

  /// Runs with consecutive pieces in the same direction joined (a staircase run can continue
  /// straight out of the start block), so only real turns remain between runs.
  private func mergeCollinear(_ runs: [RouteRun]) -> [RouteRun] {
    var merged: [RouteRun] = []
    for run in runs {
      if var last = merged.last, Self.sameDirection(last, run) {
        last.to = run.to
        merged[merged.count - 1] = last
      } else {
        merged.append(run)
      }
    }
    return merged
  }

  /// Whether two runs go the same way along the same axis.
  private static func sameDirection(_ a: RouteRun, _ b: RouteRun) -> Bool {
    let au = (a.to.u - a.from.u).sign
    let av = (a.to.v - a.from.v).sign
    let bu = (b.to.u - b.from.u).sign
    let bv = (b.to.v - b.from.v).sign
    let aHorizontal = a.from.v == a.to.v
    let bHorizontal = b.from.v == b.to.v
    guard aHorizontal == bHorizontal else { return false }
    return aHorizontal ? au == bu : av == bv
  }
}
