// Sources/FleetEngineMessages/TrafficRendering.swift - how to colour a polyline by traffic
//
// maps.fleetengine.v1.VisualTrafficReportPolylineRendering (with RoadStretch and
// its Style) and TrafficPolylineData (google/maps/fleetengine/v1/vehicles.proto).

public import ProtoWire

/// `maps.fleetengine.v1.VisualTrafficReportPolylineRendering`: how clients should colour parts of a route polyline.
public struct VisualTrafficReportPolylineRendering: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.VisualTrafficReportPolylineRendering"

  /// `maps.fleetengine.v1.VisualTrafficReportPolylineRendering.RoadStretch`: one stretch of road to render.
  public struct RoadStretch: ProtoMessage, Hashable {
    public static let protoMessageName = "maps.fleetengine.v1.VisualTrafficReportPolylineRendering.RoadStretch"

    /// `maps.fleetengine.v1.VisualTrafficReportPolylineRendering.RoadStretch.Style`: the traffic on a stretch of road.
    public enum Style: ProtoEnum, CaseIterable {
      /// `STYLE_UNSPECIFIED` (0): no style selected.
      case styleUnspecified
      /// `SLOWER_TRAFFIC` (1): traffic is slowing down.
      case slowerTraffic
      /// `TRAFFIC_JAM` (2): there is a traffic jam.
      case trafficJam
      /// A value this version does not name, kept as received.
      case unrecognized(Int32)

      public static let allCases: [Style] = [.styleUnspecified, .slowerTraffic, .trafficJam]

      public init(rawValue: Int32) {
        switch rawValue {
        case 0: self = .styleUnspecified
        case 1: self = .slowerTraffic
        case 2: self = .trafficJam
        default: self = .unrecognized(rawValue)
        }
      }

      public var rawValue: Int32 {
        switch self {
        case .styleUnspecified: 0
        case .slowerTraffic: 1
        case .trafficJam: 2
        case .unrecognized(let value): value
        }
      }

      public var protoName: String {
        switch self {
        case .styleUnspecified: "STYLE_UNSPECIFIED"
        case .slowerTraffic: "SLOWER_TRAFFIC"
        case .trafficJam: "TRAFFIC_JAM"
        case .unrecognized(let value): String(value)
        }
      }
    }

    /// `style` (field 1): how to render the stretch.
    public var style: Style = .styleUnspecified
    /// `offset_meters` (field 2): where the stretch starts, in meters from the first point of the polyline.
    public var offsetMeters: Int32 = 0
    /// `length_meters` (field 3): the length of the stretch in meters.
    public var lengthMeters: Int32 = 0
    public var unknownFields = UnknownFields()

    public init() {}

    public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
      while let tag = try reader.nextTag() {
        switch tag.fieldNumber {
        case 1: style = try reader.readEnum(tag)
        case 2: offsetMeters = try reader.readInt32(tag)
        case 3: lengthMeters = try reader.readInt32(tag)
        default: try reader.skipField(tag, into: &unknownFields)
        }
      }
    }

    public func encodedSize() -> Int {
      var size = unknownFields.count
      if style.rawValue != 0 { size += WireSize.enum(style, field: 1) }
      if offsetMeters != 0 { size += WireSize.int32(offsetMeters, field: 2) }
      if lengthMeters != 0 { size += WireSize.int32(lengthMeters, field: 3) }
      return size
    }

    public func encodeFields(to writer: inout WireWriter) {
      if style.rawValue != 0 { writer.writeEnum(style, field: 1) }
      if offsetMeters != 0 { writer.writeInt32(offsetMeters, field: 2) }
      if lengthMeters != 0 { writer.writeInt32(lengthMeters, field: 3) }
      writer.writeUnknown(unknownFields)
    }
  }

  /// `road_stretch` (field 1): the stretches to render; they do not overlap and need not cover the whole route.
  public var roadStretch: [RoadStretch] = []
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readRepeatedMessage(tag, into: &roadStretch)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    size += WireSize.repeatedMessage(roadStretch, field: 1)
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    writer.writeRepeatedMessage(roadStretch, field: 1)
    writer.writeUnknown(unknownFields)
  }
}

/// `maps.fleetengine.v1.TrafficPolylineData`: traffic conditions along an expected vehicle route.
public struct TrafficPolylineData: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.TrafficPolylineData"

  /// `traffic_rendering` (field 1): a polyline rendering of traffic speed for all regions along one stretch.
  public var trafficRendering: VisualTrafficReportPolylineRendering?
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &trafficRendering)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let trafficRendering { size += WireSize.message(trafficRendering, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let trafficRendering { writer.writeMessage(trafficRendering, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}
