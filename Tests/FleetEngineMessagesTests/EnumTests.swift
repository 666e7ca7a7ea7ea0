// Tests/FleetEngineMessagesTests/EnumTests.swift - every enum names the proto values with the proto numbers

import FleetEngineMessages
import ProtoWire
import Testing

/// A proto enum value as the .proto file spells it.
struct NamedValue: Hashable, CustomStringConvertible {
  var name: String
  var number: Int32
  var description: String { "\(name)=\(number)" }
}

/// The named values of `E`, in `allCases` order.
func namedValues<E: ProtoEnum & CaseIterable>(_: E.Type) -> [NamedValue] {
  E.allCases.map { NamedValue(name: $0.protoName, number: $0.rawValue) }
}

/// Whether every case of `E` maps to its number and back, and unnamed numbers are kept.
func roundTripsRawValues<E: ProtoEnum & CaseIterable>(_: E.Type) -> Bool {
  E.allCases.allSatisfy { E(rawValue: $0.rawValue) == $0 }
    && E(rawValue: 12_345).rawValue == 12_345
    && E(rawValue: 12_345).protoName == "12345"
    && !E.allCases.contains(E(rawValue: 12_345))
}

@Suite("Enums")
struct EnumTests {
  enum Family: String, CaseIterable, Sendable {
    case tripStatus, tripType, tripView, billingPlatformIdentifier, waypointType, polylineFormatType
    case navigationStatus, locationSensor, sdkType, platform, speed, style

    var actual: [NamedValue] {
      switch self {
      case .tripStatus: namedValues(TripStatus.self)
      case .tripType: namedValues(TripType.self)
      case .tripView: namedValues(TripView.self)
      case .billingPlatformIdentifier: namedValues(BillingPlatformIdentifier.self)
      case .waypointType: namedValues(WaypointType.self)
      case .polylineFormatType: namedValues(PolylineFormatType.self)
      case .navigationStatus: namedValues(NavigationStatus.self)
      case .locationSensor: namedValues(LocationSensor.self)
      case .sdkType: namedValues(RequestHeader.SdkType.self)
      case .platform: namedValues(RequestHeader.Platform.self)
      case .speed: namedValues(SpeedReadingInterval.Speed.self)
      case .style: namedValues(VisualTrafficReportPolylineRendering.RoadStretch.Style.self)
      }
    }

    var roundTrips: Bool {
      switch self {
      case .tripStatus: roundTripsRawValues(TripStatus.self)
      case .tripType: roundTripsRawValues(TripType.self)
      case .tripView: roundTripsRawValues(TripView.self)
      case .billingPlatformIdentifier: roundTripsRawValues(BillingPlatformIdentifier.self)
      case .waypointType: roundTripsRawValues(WaypointType.self)
      case .polylineFormatType: roundTripsRawValues(PolylineFormatType.self)
      case .navigationStatus: roundTripsRawValues(NavigationStatus.self)
      case .locationSensor: roundTripsRawValues(LocationSensor.self)
      case .sdkType: roundTripsRawValues(RequestHeader.SdkType.self)
      case .platform: roundTripsRawValues(RequestHeader.Platform.self)
      case .speed: roundTripsRawValues(SpeedReadingInterval.Speed.self)
      case .style: roundTripsRawValues(VisualTrafficReportPolylineRendering.RoadStretch.Style.self)
      }
    }

    /// The values as the descriptors of google-maps-fleetengine list them.
    var expected: [NamedValue] {
      let pairs: [(String, Int32)] =
        switch self {
        case .tripStatus:
          [
            ("UNKNOWN_TRIP_STATUS", 0), ("NEW", 1), ("ENROUTE_TO_PICKUP", 2), ("ARRIVED_AT_PICKUP", 3),
            ("ENROUTE_TO_DROPOFF", 4), ("COMPLETE", 5), ("CANCELED", 6), ("ARRIVED_AT_INTERMEDIATE_DESTINATION", 7),
            ("ENROUTE_TO_INTERMEDIATE_DESTINATION", 8),
          ]
        case .tripType: [("UNKNOWN_TRIP_TYPE", 0), ("SHARED", 1), ("EXCLUSIVE", 2)]
        case .tripView: [("TRIP_VIEW_UNSPECIFIED", 0), ("SDK", 1), ("JOURNEY_SHARING_V1S", 2)]
        case .billingPlatformIdentifier:
          [
            ("BILLING_PLATFORM_IDENTIFIER_UNSPECIFIED", 0), ("SERVER", 1), ("WEB", 2), ("ANDROID", 3), ("IOS", 4),
            ("OTHERS", 5),
          ]
        case .waypointType:
          [
            ("UNKNOWN_WAYPOINT_TYPE", 0), ("PICKUP_WAYPOINT_TYPE", 1), ("DROP_OFF_WAYPOINT_TYPE", 2),
            ("INTERMEDIATE_DESTINATION_WAYPOINT_TYPE", 3),
          ]
        case .polylineFormatType: [("UNKNOWN_FORMAT_TYPE", 0), ("LAT_LNG_LIST_TYPE", 1), ("ENCODED_POLYLINE_TYPE", 2)]
        case .navigationStatus:
          [
            ("UNKNOWN_NAVIGATION_STATUS", 0), ("NO_GUIDANCE", 1), ("ENROUTE_TO_DESTINATION", 2), ("OFF_ROUTE", 3),
            ("ARRIVED_AT_DESTINATION", 4),
          ]
        case .locationSensor:
          [
            ("UNKNOWN_SENSOR", 0), ("GPS", 1), ("NETWORK", 2), ("PASSIVE", 3), ("ROAD_SNAPPED_LOCATION_PROVIDER", 4),
            ("CUSTOMER_SUPPLIED_LOCATION", 5), ("FLEET_ENGINE_LOCATION", 6), ("FUSED_LOCATION_PROVIDER", 100),
            ("CORE_LOCATION", 200),
          ]
        case .sdkType: [("SDK_TYPE_UNSPECIFIED", 0), ("CONSUMER", 1), ("DRIVER", 2), ("JAVASCRIPT", 3)]
        case .platform: [("PLATFORM_UNSPECIFIED", 0), ("ANDROID", 1), ("IOS", 2), ("WEB", 3)]
        case .speed: [("SPEED_UNSPECIFIED", 0), ("NORMAL", 1), ("SLOW", 2), ("TRAFFIC_JAM", 3)]
        case .style: [("STYLE_UNSPECIFIED", 0), ("SLOWER_TRAFFIC", 1), ("TRAFFIC_JAM", 2)]
        }
      return pairs.map { NamedValue(name: $0.0, number: $0.1) }
    }
  }

  @Test(arguments: Family.allCases)
  func namesAndNumbersMatchTheProto(_ family: Family) {
    #expect(family.actual == family.expected)
  }

  @Test(arguments: Family.allCases)
  func rawValuesRoundTripAndUnknownOnesAreKept(_ family: Family) {
    #expect(family.roundTrips)
  }

  @Test func locationSensorSparseNumbers() {
    #expect(LocationSensor(rawValue: 100) == .fusedLocationProvider)
    #expect(LocationSensor(rawValue: 200) == .coreLocation)
    #expect(LocationSensor(rawValue: 7) == .unrecognized(7))
  }
}
