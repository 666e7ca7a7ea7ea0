// Tests/FleetEngineMessagesTests/SmallMessageTests.swift - wrappers, traffic, headers against hand-written bytes

import FleetEngineMessages
import ProtoWire
import Testing

@Suite("Wrapper messages")
struct WrapperTests {
  /// One wrapper holding a value, and the bytes protobuf writes for it.
  enum Wrapped: CaseIterable, Sendable, CustomTestStringConvertible {
    case double, negativeZeroDouble, float, int64, uint64, int32, uint32, bool, string, bytes

    var expected: [UInt8] {
      switch self {
      case .double: [0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F]  // value: 1.5
      case .negativeZeroDouble: [0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80]  // value: -0.0 (bits not zero)
      case .float: [0x0D, 0x00, 0x00, 0xC0, 0x3F]  // value: 1.5f
      case .int64: [0x08, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]  // value: -2
      case .uint64: [0x08, 0xAC, 0x02]  // value: 300
      case .int32: [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]  // value: -1, sign-extended
      case .uint32: [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]  // value: 4294967295
      case .bool: [0x08, 0x01]  // value: true
      case .string: [0x0A, 0x06, 0x68, 0xC3, 0xA9, 0x6C, 0x6C, 0x6F]  // value: "héllo"
      case .bytes: [0x0A, 0x02, 0x00, 0xFF]  // value: 00 FF
      }
    }

    /// The encoding of the wrapper, and whether decoding `expected` gives the same wrapper back.
    var encodedAndDecodesBack: ([UInt8], Bool) {
      switch self {
      case .double: check(DoubleValue(1.5))
      case .negativeZeroDouble: check(DoubleValue(-0.0))
      case .float: check(FloatValue(1.5))
      case .int64: check(Int64Value(-2))
      case .uint64: check(UInt64Value(300))
      case .int32: check(Int32Value(-1))
      case .uint32: check(UInt32Value(.max))
      case .bool: check(BoolValue(true))
      case .string: check(StringValue("héllo"))
      case .bytes: check(BytesValue([0x00, 0xFF]))
      }
    }

    private func check<M: ProtoMessage>(_ message: M) -> ([UInt8], Bool) {
      let decoded = try? M(serializedBytes: expected)
      return (message.serializedBytes(), decoded == message)
    }

    var testDescription: String { "\(self)" }
  }

  @Test(arguments: Wrapped.allCases)
  func encodesAndDecodesExactly(_ wrapped: Wrapped) {
    let (encoded, decodesBack) = wrapped.encodedAndDecodesBack
    #expect(encoded == wrapped.expected)
    #expect(decodesBack)
  }

  @Test func defaultValuesAreLeftOut() {
    #expect(DoubleValue(0).serializedBytes().isEmpty)
    #expect(FloatValue(0).serializedBytes().isEmpty)
    #expect(Int64Value(0).serializedBytes().isEmpty)
    #expect(UInt64Value(0).serializedBytes().isEmpty)
    #expect(Int32Value(0).serializedBytes().isEmpty)
    #expect(UInt32Value(0).serializedBytes().isEmpty)
    #expect(BoolValue(false).serializedBytes().isEmpty)
    #expect(StringValue("").serializedBytes().isEmpty)
    #expect(BytesValue([]).serializedBytes().isEmpty)
    #expect(Int32Value(7) != Int32Value())
    #expect(Int32Value(7).value == 7)
  }

  @Test func protoMessageNames() {
    #expect(DoubleValue.protoMessageName == "google.protobuf.DoubleValue")
    #expect(UInt64Value.protoMessageName == "google.protobuf.UInt64Value")
    #expect(BytesValue.protoMessageName == "google.protobuf.BytesValue")
    #expect(Trip.protoMessageName == "maps.fleetengine.v1.Trip")
    #expect(TripUpdate.protoMessageName == "journeysharing.v1.TripUpdate")
    #expect(StreamTripRequest.protoMessageName == "journeysharing.v1.StreamTripRequest")
    #expect(
      VisualTrafficReportPolylineRendering.RoadStretch.protoMessageName
        == "maps.fleetengine.v1.VisualTrafficReportPolylineRendering.RoadStretch")
  }
}

@Suite("Traffic and header messages")
struct TrafficAndHeaderTests {
  @Test func trafficPolylineDataExactBytes() throws {
    var stretch = VisualTrafficReportPolylineRendering.RoadStretch()
    stretch.style = .trafficJam
    stretch.offsetMeters = 10
    stretch.lengthMeters = 250
    var rendering = VisualTrafficReportPolylineRendering()
    rendering.roadStretch = [stretch]
    var data = TrafficPolylineData()
    data.trafficRendering = rendering
    // TrafficPolylineData { traffic_rendering { road_stretch { style: TRAFFIC_JAM offset_meters: 10 length_meters: 250 } } }
    let expected: [UInt8] = [
      0x0A, 0x09,  // field 1 (traffic_rendering), 9 bytes
      0x0A, 0x07,  //   field 1 (road_stretch), 7 bytes
      0x08, 0x02,  //     style: TRAFFIC_JAM
      0x10, 0x0A,  //     offset_meters: 10
      0x18, 0xFA, 0x01,  //     length_meters: 250
    ]
    #expect(data.serializedBytes() == expected)
    #expect(try TrafficPolylineData(serializedBytes: expected) == data)
  }

  @Test func consumableTrafficPolylineExactBytes() throws {
    // ConsumableTrafficPolyline {
    //   speed_reading_interval { start_polyline_point_index: 0 end_polyline_point_index: 4 speed: SLOW }
    //   speed_reading_interval { end_polyline_point_index: 6 speed: 9 (unnamed) }
    //   encoded_path_to_waypoint: "abc"
    // }
    let expected: [UInt8] = [
      0x0A, 0x04, 0x10, 0x04, 0x18, 0x02,  // field 1: end 4, speed SLOW (start 0 left out)
      0x0A, 0x04, 0x10, 0x06, 0x18, 0x09,  // field 1: end 6, speed 9
      0x12, 0x03, 0x61, 0x62, 0x63,  // field 2: "abc"
    ]
    let polyline = try ConsumableTrafficPolyline(serializedBytes: expected)
    #expect(polyline.speedReadingInterval.map(\.speed) == [.slow, .unrecognized(9)])
    #expect(polyline.speedReadingInterval.map(\.endPolylinePointIndex) == [4, 6])
    #expect(polyline.encodedPathToWaypoint == "abc")
    #expect(polyline.serializedBytes() == expected)
  }

  @Test func requestHeaderEveryFieldInOrder() throws {
    var header = RequestHeader()
    header.traceId = "t"
    header.androidApiLevel = 34
    header.manufacturer = "m"
    header.platform = .android
    header.navSdkVersion = "n"
    header.mapsSdkVersion = "s"
    header.sdkType = .driver
    header.deviceModel = "d"
    header.osVersion = "o"
    header.sdkVersion = "v"
    header.regionCode = "US"
    header.languageCode = "en"
    let expected: [UInt8] = [
      0x0A, 0x02, 0x65, 0x6E,  // 1 language_code: "en"
      0x12, 0x02, 0x55, 0x53,  // 2 region_code: "US"
      0x1A, 0x01, 0x76,  // 3 sdk_version: "v"
      0x22, 0x01, 0x6F,  // 4 os_version: "o"
      0x2A, 0x01, 0x64,  // 5 device_model: "d"
      0x30, 0x02,  // 6 sdk_type: DRIVER
      0x3A, 0x01, 0x73,  // 7 maps_sdk_version: "s"
      0x42, 0x01, 0x6E,  // 8 nav_sdk_version: "n"
      0x48, 0x01,  // 9 platform: ANDROID
      0x52, 0x01, 0x6D,  // 10 manufacturer: "m"
      0x58, 0x22,  // 11 android_api_level: 34
      0x62, 0x01, 0x74,  // 12 trace_id: "t"
    ]
    #expect(header.serializedBytes() == expected)
    #expect(try RequestHeader(serializedBytes: expected) == header)
  }
}
