// Sources/GRPCHealth/HealthMessages.swift - grpc.health.v1's two messages, by hand on ProtoWire
//
// HealthCheckRequest and HealthCheckResponse of gRPC's standard health-checking service
// (Protos/grpc/health/v1/health.proto), written like the Fleet Engine messages: decode field by
// field, encode in two passes, unknown fields kept.

public import ProtoWire

/// The method paths of `grpc.health.v1.Health`, which FleetSim and the trip relay serve.
public enum HealthMethods {
  /// The service's full name.
  public static let serviceName = "grpc.health.v1.Health"
  /// Unary `Check`: `HealthCheckRequest` → `HealthCheckResponse`.
  public static let check = "/grpc.health.v1.Health/Check"
  /// Server-streaming `Watch`: `HealthCheckRequest` → a stream of `HealthCheckResponse`.
  public static let watch = "/grpc.health.v1.Health/Watch"
}

/// `grpc.health.v1.HealthCheckRequest`: the service asked about.
public struct HealthCheckRequest: ProtoMessage, Hashable {
  public static let protoMessageName = "grpc.health.v1.HealthCheckRequest"

  /// `service` (field 1): a fully qualified service name, or `""` for the server as a whole.
  public var service: String = ""
  public var unknownFields = UnknownFields()

  public init() {}

  /// A request about `service`.
  public init(service: String) {
    self.service = service
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: service = try reader.readString(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if !service.isEmpty { size += WireSize.string(service, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if !service.isEmpty { writer.writeString(service, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `grpc.health.v1.HealthCheckResponse`: a service's serving status.
public struct HealthCheckResponse: ProtoMessage, Hashable {
  public static let protoMessageName = "grpc.health.v1.HealthCheckResponse"

  /// `grpc.health.v1.HealthCheckResponse.ServingStatus`.
  public enum ServingStatus: ProtoEnum, CaseIterable {
    /// `UNKNOWN` (0): no status set.
    case unknown
    /// `SERVING` (1): the service takes calls.
    case serving
    /// `NOT_SERVING` (2): the service takes no calls (FleetSim: while it drains).
    case notServing
    /// `SERVICE_UNKNOWN` (3): `Watch` only: the server does not know the service.
    case serviceUnknown
    /// A value this version does not name, kept as received.
    case unrecognized(Int32)

    public static let allCases: [ServingStatus] = [.unknown, .serving, .notServing, .serviceUnknown]

    public init(rawValue: Int32) {
      switch rawValue {
      case 0: self = .unknown
      case 1: self = .serving
      case 2: self = .notServing
      case 3: self = .serviceUnknown
      default: self = .unrecognized(rawValue)
      }
    }

    public var rawValue: Int32 {
      switch self {
      case .unknown: 0
      case .serving: 1
      case .notServing: 2
      case .serviceUnknown: 3
      case .unrecognized(let value): value
      }
    }

    public var protoName: String {
      switch self {
      case .unknown: "UNKNOWN"
      case .serving: "SERVING"
      case .notServing: "NOT_SERVING"
      case .serviceUnknown: "SERVICE_UNKNOWN"
      case .unrecognized(let value): String(value)
      }
    }
  }

  /// `status` (field 1).
  public var status: ServingStatus = .unknown
  public var unknownFields = UnknownFields()

  public init() {}

  /// A response carrying `status`.
  public init(status: ServingStatus) {
    self.status = status
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: status = try reader.readEnum(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if status.rawValue != 0 { size += WireSize.enum(status, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if status.rawValue != 0 { writer.writeEnum(status, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}
