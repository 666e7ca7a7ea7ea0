// Sources/tripwatch/DemoView.swift - the demo's terminal view: one row per trip, or aggregates

import FleetEngineMessages

/// What the view shows of one trip.
struct TripRow: Sendable {
  var name: String
  var status: TripStatus = .unknownTripStatus
  var position: LatLng?
  var pickupETA: Double?  // seconds from now (simulated)
  var dropoffETA: Double?
  var remainingMeters: Int?
  var progress: Double = 0  // 0...1
  var updates = 0
  var errors = 0
  var lastError: String?

  var isFinal: Bool { status.isFinal }
}

enum DemoView {
  /// A fixed-width progress bar.
  static func bar(_ fraction: Double, width: Int = 20) -> String {
    let filled = Int((min(max(fraction, 0), 1) * Double(width)).rounded())
    return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
  }

  static func duration(_ seconds: Double?) -> String {
    guard let seconds else { return "   -  " }
    let total = max(0, Int(seconds.rounded()))
    return String(format2: total / 60) + "m" + String(format2: total % 60) + "s"
  }

  static func padded(_ text: String, _ width: Int) -> String {
    text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
  }

  static func row(_ trip: TripRow) -> String {
    let position = trip.position.map { coordinate($0.latitude) + "," + coordinate($0.longitude) } ?? "-"
    let remaining = trip.remainingMeters.map { "\($0) m" } ?? "-"
    return padded(trip.name, 12) + " " + padded(trip.status.protoName, 36) + " " + padded(position, 20) + " pickup "
      + duration(trip.pickupETA) + " dropoff " + duration(trip.dropoffETA) + " " + padded(remaining, 8) + " "
      + bar(trip.progress)
  }

  static func coordinate(_ value: Double) -> String {
    let scaled = Int((value * 100_000).rounded())
    let sign = scaled < 0 ? "-" : ""
    let magnitude = abs(scaled)
    let fraction = String(magnitude % 100_000)
    return sign + String(magnitude / 100_000) + "." + String(repeating: "0", count: 5 - fraction.count) + fraction
  }

  /// The screen: a header, one row per trip when they fit in `maxRows`, else the
  /// first rows and aggregate counts per status.
  static func screen(_ trips: [TripRow], elapsed: Double, maxRows: Int) -> [String] {
    var lines: [String] = []
    let done = trips.filter(\.isFinal).count
    let updates = trips.reduce(0) { $0 + $1.updates }
    let errors = trips.reduce(0) { $0 + $1.errors }
    lines.append(
      "tripwatch demo: \(trips.count) trips, \(done) finished, \(updates) updates, \(errors) errors, "
        + "\(Int(elapsed)) s")
    if trips.count <= maxRows {
      lines += trips.map(row)
    } else {
      let shown = max(0, maxRows - 2)
      lines += trips.prefix(shown).map(row)
      var counts: [String: Int] = [:]
      for trip in trips.dropFirst(shown) { counts[trip.status.protoName, default: 0] += 1 }
      let summary = counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
      lines.append("… and \(trips.count - shown) more: \(summary)")
      let progress = trips.reduce(0) { $0 + $1.progress } / Double(max(1, trips.count))
      lines.append("overall " + bar(progress, width: 40))
    }
    return lines
  }
}

extension String {
  init(format2 value: Int) {
    self = value < 10 ? "0\(value)" : String(value)
  }
}
