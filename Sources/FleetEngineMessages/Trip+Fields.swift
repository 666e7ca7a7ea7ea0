// Sources/FleetEngineMessages/Trip+Fields.swift - Trip fields addressed by field number
//
// The streaming GetTrip (Protos/journeysharing/v1/trip_stream.proto) sends the
// whole Trip once, then only the fields that changed, named by their Trip field
// numbers, with replace semantics. The server diffs two snapshots with
// `changedFields(from:)` and sends `projected(onto:)`; the client folds each
// update in with `apply(_:)`. Both sides use the same table, so they cannot
// disagree about what a number means.

/// Field-level operations on a trip, by `maps.fleetengine.v1.Trip` field number.
///
/// A field "is set" as proto3 encodes it: a string, repeated field, number or
/// enum when not at its default, a message when present.
///
/// Unknown fields (those a newer server sent that this version cannot name)
/// behave as one pseudo-field without a number: a full update replaces them with
/// the update's, which carries the newer picture; a partial update leaves them as
/// they are, since `updated_fields` has no way to name them. ``changedFields(from:)``
/// and ``projected(onto:)`` ignore them.
extension Trip {
  /// The numbers of the 34 fields Trip declares, ascending (18 is reserved in trips.proto).
  public static let fieldNumbers: [Int32] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
    19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
  ]

  /// ``fieldNumbers`` as a bit set: bit n for field n.
  public static let allFieldBits: UInt64 = fieldNumbers.reduce(0) { $0 | 1 << UInt64($1) }

  /// `numbers` as a bit set (bit n for field n); numbers Trip does not declare are left out.
  public static func fieldBits(_ numbers: some Sequence<Int32>) -> UInt64 {
    var bits: UInt64 = 0
    for number in numbers where number > 0 && number < 64 { bits |= 1 << UInt64(number) }
    return bits & allFieldBits
  }

  /// The numbers of the fields in `bits`, ascending.
  public static func fieldNumbers(inBits bits: UInt64) -> [Int32] {
    var numbers: [Int32] = []
    var rest = bits & allFieldBits
    while rest != 0 {
      numbers.append(Int32(rest.trailingZeroBitCount))
      rest &= rest - 1
    }
    return numbers
  }

  /// Whether field `number` is set; `false` for a number Trip does not declare.
  public func hasField(_ number: Int32) -> Bool {
    switch number {
    case 1: !name.isEmpty
    case 2: !vehicleId.isEmpty
    case 3: tripStatus.rawValue != 0
    case 4: tripType.rawValue != 0
    case 5: pickupPoint != nil
    case 6: pickupTime != nil
    case 7: dropoffPoint != nil
    case 8: dropoffTime != nil
    case 9: !route.isEmpty
    case 10: numberOfPassengers != 0
    case 11: lastLocation != nil
    case 12: remainingDistanceMeters != nil
    case 13: etaToFirstWaypoint != nil
    case 14: !intermediateDestinations.isEmpty
    case 15: intermediateDestinationIndex != 0
    case 16: !remainingWaypoints.isEmpty
    case 17: currentRouteSegmentVersion != nil
    case 19: remainingWaypointsVersion != nil
    case 20: !vehicleWaypoints.isEmpty
    case 21: !currentRouteSegment.isEmpty
    case 22: actualPickupPoint != nil
    case 23: actualDropoffPoint != nil
    case 24: currentRouteSegmentEndPoint != nil
    case 25: intermediateDestinationsVersion != nil
    case 26: lastLocationSnappable
    case 27: remainingTimeToFirstWaypoint != nil
    case 28: currentRouteSegmentTraffic != nil
    case 29: remainingWaypointsRouteVersion != nil
    case 30: currentRouteSegmentTrafficVersion != nil
    case 31: view.rawValue != 0
    case 32: actualPickupArrivalPoint != nil
    case 33: !actualIntermediateDestinationArrivalPoints.isEmpty
    case 34: !actualIntermediateDestinations.isEmpty
    case 35: !attributes.isEmpty
    default: false
    }
  }

  /// Sets field `number` to its value in `other`, with replace semantics: a
  /// field not set in `other` is cleared here. A number Trip does not declare is
  /// ignored, so an update from a newer server never fails on a field it added.
  public mutating func copyField(_ number: Int32, from other: Trip) {
    switch number {
    case 1: name = other.name
    case 2: vehicleId = other.vehicleId
    case 3: tripStatus = other.tripStatus
    case 4: tripType = other.tripType
    case 5: pickupPoint = other.pickupPoint
    case 6: pickupTime = other.pickupTime
    case 7: dropoffPoint = other.dropoffPoint
    case 8: dropoffTime = other.dropoffTime
    case 9: route = other.route
    case 10: numberOfPassengers = other.numberOfPassengers
    case 11: lastLocation = other.lastLocation
    case 12: remainingDistanceMeters = other.remainingDistanceMeters
    case 13: etaToFirstWaypoint = other.etaToFirstWaypoint
    case 14: intermediateDestinations = other.intermediateDestinations
    case 15: intermediateDestinationIndex = other.intermediateDestinationIndex
    case 16: remainingWaypoints = other.remainingWaypoints
    case 17: currentRouteSegmentVersion = other.currentRouteSegmentVersion
    case 19: remainingWaypointsVersion = other.remainingWaypointsVersion
    case 20: vehicleWaypoints = other.vehicleWaypoints
    case 21: currentRouteSegment = other.currentRouteSegment
    case 22: actualPickupPoint = other.actualPickupPoint
    case 23: actualDropoffPoint = other.actualDropoffPoint
    case 24: currentRouteSegmentEndPoint = other.currentRouteSegmentEndPoint
    case 25: intermediateDestinationsVersion = other.intermediateDestinationsVersion
    case 26: lastLocationSnappable = other.lastLocationSnappable
    case 27: remainingTimeToFirstWaypoint = other.remainingTimeToFirstWaypoint
    case 28: currentRouteSegmentTraffic = other.currentRouteSegmentTraffic
    case 29: remainingWaypointsRouteVersion = other.remainingWaypointsRouteVersion
    case 30: currentRouteSegmentTrafficVersion = other.currentRouteSegmentTrafficVersion
    case 31: view = other.view
    case 32: actualPickupArrivalPoint = other.actualPickupArrivalPoint
    case 33: actualIntermediateDestinationArrivalPoints = other.actualIntermediateDestinationArrivalPoints
    case 34: actualIntermediateDestinations = other.actualIntermediateDestinations
    case 35: attributes = other.attributes
    default: break
    }
  }

  /// The numbers of the fields whose values differ from `old`, ascending.
  ///
  /// Values compare with `==`, except that floating-point numbers (in points,
  /// locations, accuracies and attributes) compare by bit pattern: a NaN equals
  /// itself, so a field holding NaN is not reported as changed on every diff,
  /// and -0.0 differs from 0.0, because the two encode differently. Enums
  /// compare by wire value, so `.unrecognized(5)` and `.complete` are the same.
  public func changedFields(from old: Trip) -> [Int32] {
    var changed: [Int32] = []
    for number in Self.fieldNumbers where !fieldEquals(number, old) {
      changed.append(number)
    }
    return changed
  }

  /// ``changedFields(from:)`` as a bit set (bit n for field n).
  public func changedFieldBits(from old: Trip) -> UInt64 {
    var changed: UInt64 = 0
    for number in Self.fieldNumbers where !fieldEquals(number, old) { changed |= 1 << UInt64(number) }
    return changed
  }

  /// A trip holding only `fields` (as set here), everything else at its
  /// default: the `trip` of a partial update. Numbers Trip does not declare
  /// are ignored; unknown fields are not carried over.
  public func projected(onto fields: [Int32]) -> Trip {
    var projection = Trip()
    for number in fields {
      projection.copyField(number, from: self)
    }
    return projection
  }

  /// Folds a streaming update into this trip.
  ///
  /// With `full_trip` set, the update's trip replaces this one entirely, unknown
  /// fields included (an absent trip gives the empty trip). Otherwise each field
  /// listed in `updated_fields` takes its value in the update's trip, and is
  /// cleared when not set there (or when the update carries no trip); numbers
  /// Trip does not declare are ignored and unlisted fields are left alone.
  public mutating func apply(_ update: TripUpdate) {
    if update.fullTrip {
      self = update.trip ?? Trip()
      return
    }
    guard !update.updatedFields.isEmpty else { return }
    let source = update.trip ?? Trip()
    for number in update.updatedFields {
      copyField(number, from: source)
    }
  }

  /// Whether field `number` holds the same value here and in `other` (see ``changedFields(from:)``).
  func fieldEquals(_ number: Int32, _ other: Trip) -> Bool {
    switch number {
    case 1: name == other.name
    case 2: vehicleId == other.vehicleId
    case 3: tripStatus.rawValue == other.tripStatus.rawValue
    case 4: tripType.rawValue == other.tripType.rawValue
    case 5: bitwiseEqual(pickupPoint, other.pickupPoint)
    case 6: pickupTime == other.pickupTime
    case 7: bitwiseEqual(dropoffPoint, other.dropoffPoint)
    case 8: dropoffTime == other.dropoffTime
    case 9: bitwiseEqual(route, other.route)
    case 10: numberOfPassengers == other.numberOfPassengers
    case 11: bitwiseEqual(lastLocation, other.lastLocation)
    case 12: remainingDistanceMeters == other.remainingDistanceMeters
    case 13: etaToFirstWaypoint == other.etaToFirstWaypoint
    case 14: bitwiseEqual(intermediateDestinations, other.intermediateDestinations)
    case 15: intermediateDestinationIndex == other.intermediateDestinationIndex
    case 16: bitwiseEqual(remainingWaypoints, other.remainingWaypoints)
    case 17: currentRouteSegmentVersion == other.currentRouteSegmentVersion
    case 19: remainingWaypointsVersion == other.remainingWaypointsVersion
    case 20: bitwiseEqual(vehicleWaypoints, other.vehicleWaypoints)
    case 21: currentRouteSegment == other.currentRouteSegment
    case 22: bitwiseEqual(actualPickupPoint, other.actualPickupPoint)
    case 23: bitwiseEqual(actualDropoffPoint, other.actualDropoffPoint)
    case 24: bitwiseEqual(currentRouteSegmentEndPoint, other.currentRouteSegmentEndPoint)
    case 25: intermediateDestinationsVersion == other.intermediateDestinationsVersion
    case 26: lastLocationSnappable == other.lastLocationSnappable
    case 27: remainingTimeToFirstWaypoint == other.remainingTimeToFirstWaypoint
    case 28: currentRouteSegmentTraffic == other.currentRouteSegmentTraffic
    case 29: remainingWaypointsRouteVersion == other.remainingWaypointsRouteVersion
    case 30: currentRouteSegmentTrafficVersion == other.currentRouteSegmentTrafficVersion
    case 31: view.rawValue == other.view.rawValue
    case 32: bitwiseEqual(actualPickupArrivalPoint, other.actualPickupArrivalPoint)
    case 33: bitwiseEqual(actualIntermediateDestinationArrivalPoints, other.actualIntermediateDestinationArrivalPoints)
    case 34: bitwiseEqual(actualIntermediateDestinations, other.actualIntermediateDestinations)
    case 35: bitwiseEqual(attributes, other.attributes)
    default: true
    }
  }
}

// MARK: - Bit-exact comparison of the messages that hold floating-point numbers

/// A message compared field by field with floating-point numbers by bit pattern.
///
/// Each conformance checks its floating-point-bearing fields bit by bit, then
/// compares copies with those fields cleared using `==`; a field added to the
/// type later is then still compared (with `==`) without touching this code.
package protocol BitwiseComparable {
  /// Whether `self` and `other` are equal with floating-point numbers compared by bit pattern.
  func isBitwiseEqual(to other: Self) -> Bool
}

/// Whether two optional messages are both absent, or both present and bitwise equal.
package func bitwiseEqual<T: BitwiseComparable>(_ a: T?, _ b: T?) -> Bool {
  switch (a, b) {
  case (nil, nil): true
  case (let a?, let b?): a.isBitwiseEqual(to: b)
  default: false
  }
}

/// Whether two repeated fields have the same length and bitwise equal elements.
package func bitwiseEqual<T: BitwiseComparable>(_ a: [T], _ b: [T]) -> Bool {
  guard a.count == b.count else { return false }
  // Snapshots built from the same plan share array storage: equal without looking.
  let sameStorage = a.withUnsafeBufferPointer { pa in
    b.withUnsafeBufferPointer { pb in pa.baseAddress == pb.baseAddress }
  }
  if sameStorage { return true }
  for index in a.indices where !a[index].isBitwiseEqual(to: b[index]) {
    return false
  }
  return true
}

extension Double {
  /// Equality by bit pattern: NaN equals an identical NaN, -0.0 differs from 0.0.
  @inline(__always) package func isBitwiseEqual(to other: Double) -> Bool { bitPattern == other.bitPattern }
}

extension LatLng: BitwiseComparable {
  package func isBitwiseEqual(to other: LatLng) -> Bool {
    latitude.isBitwiseEqual(to: other.latitude) && longitude.isBitwiseEqual(to: other.longitude)
      && unknownFields == other.unknownFields
  }
}

extension DoubleValue: BitwiseComparable {
  package func isBitwiseEqual(to other: DoubleValue) -> Bool {
    value.isBitwiseEqual(to: other.value) && unknownFields == other.unknownFields
  }
}

extension TerminalLocation: BitwiseComparable {
  package func isBitwiseEqual(to other: TerminalLocation) -> Bool {
    guard bitwiseEqual(point, other.point) else { return false }
    var a = self
    var b = other
    a.point = nil
    b.point = nil
    return a == b
  }
}

extension StopLocation: BitwiseComparable {
  package func isBitwiseEqual(to other: StopLocation) -> Bool {
    guard bitwiseEqual(point, other.point) else { return false }
    var a = self
    var b = other
    a.point = nil
    b.point = nil
    return a == b
  }
}

extension TripWaypoint: BitwiseComparable {
  package func isBitwiseEqual(to other: TripWaypoint) -> Bool {
    guard bitwiseEqual(location, other.location), bitwiseEqual(pathToWaypoint, other.pathToWaypoint) else {
      return false
    }
    var a = self
    var b = other
    a.location = nil
    b.location = nil
    a.pathToWaypoint = []
    b.pathToWaypoint = []
    return a == b
  }
}

extension TripAttribute: BitwiseComparable {
  package func isBitwiseEqual(to other: TripAttribute) -> Bool {
    guard case .numberValue(let x) = tripAttributeValue, case .numberValue(let y) = other.tripAttributeValue else {
      return self == other
    }
    guard x.isBitwiseEqual(to: y) else { return false }
    var a = self
    var b = other
    a.tripAttributeValue = nil
    b.tripAttributeValue = nil
    return a == b
  }
}

extension VehicleLocation: BitwiseComparable {
  package func isBitwiseEqual(to other: VehicleLocation) -> Bool {
    guard bitwiseEqual(location, other.location), bitwiseEqual(rawLocation, other.rawLocation),
      bitwiseEqual(flpLocation, other.flpLocation), bitwiseEqual(supplementalLocation, other.supplementalLocation),
      bitwiseEqual(horizontalAccuracy, other.horizontalAccuracy), bitwiseEqual(latlngAccuracy, other.latlngAccuracy),
      bitwiseEqual(bearingAccuracy, other.bearingAccuracy), bitwiseEqual(headingAccuracy, other.headingAccuracy),
      bitwiseEqual(altitude, other.altitude), bitwiseEqual(verticalAccuracy, other.verticalAccuracy),
      bitwiseEqual(altitudeAccuracy, other.altitudeAccuracy), bitwiseEqual(speed, other.speed),
      bitwiseEqual(speedAccuracy, other.speedAccuracy), bitwiseEqual(rawLocationAccuracy, other.rawLocationAccuracy),
      bitwiseEqual(flpLatlngAccuracyMeters, other.flpLatlngAccuracyMeters),
      bitwiseEqual(supplementalLocationAccuracy, other.supplementalLocationAccuracy)
    else { return false }
    var a = self
    var b = other
    a.clearFloatingPointFields()
    b.clearFloatingPointFields()
    return a == b
  }

  /// Clears every field that holds a floating-point number (the ones compared above).
  private mutating func clearFloatingPointFields() {
    location = nil
    rawLocation = nil
    flpLocation = nil
    supplementalLocation = nil
    horizontalAccuracy = nil
    latlngAccuracy = nil
    bearingAccuracy = nil
    headingAccuracy = nil
    altitude = nil
    verticalAccuracy = nil
    altitudeAccuracy = nil
    speed = nil
    speedAccuracy = nil
    rawLocationAccuracy = nil
    flpLatlngAccuracyMeters = nil
    supplementalLocationAccuracy = nil
  }
}

extension TripStatus {
  /// Whether the status ends the trip: COMPLETE or CANCELED.
  public var isFinal: Bool { self == .complete || self == .canceled }
}

extension Trip {
  /// Whether the trip has ended: its status is COMPLETE or CANCELED.
  public var isFinal: Bool { tripStatus.isFinal }
}
