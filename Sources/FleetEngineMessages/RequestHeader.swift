// Sources/FleetEngineMessages/RequestHeader.swift - the standard Fleet Engine request header
//
// maps.fleetengine.v1.RequestHeader with its SdkType and Platform enums
// (google/maps/fleetengine/v1/header.proto).

public import ProtoWire

/// `maps.fleetengine.v1.RequestHeader`: fields common to every Fleet Engine request.
public struct RequestHeader: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.RequestHeader"

  /// `maps.fleetengine.v1.RequestHeader.SdkType`: the kind of SDK sending a request.
  public enum SdkType: ProtoEnum, CaseIterable {
    /// `SDK_TYPE_UNSPECIFIED` (0): omitted.
    case sdkTypeUnspecified
    /// `CONSUMER` (1): the Consumer SDK.
    case consumer
    /// `DRIVER` (2): the Driver SDK.
    case driver
    /// `JAVASCRIPT` (3): the JavaScript SDK.
    case javascript
    /// A value this version does not name, kept as received.
    case unrecognized(Int32)

    public static let allCases: [SdkType] = [.sdkTypeUnspecified, .consumer, .driver, .javascript]

    public init(rawValue: Int32) {
      switch rawValue {
      case 0: self = .sdkTypeUnspecified
      case 1: self = .consumer
      case 2: self = .driver
      case 3: self = .javascript
      default: self = .unrecognized(rawValue)
      }
    }

    public var rawValue: Int32 {
      switch self {
      case .sdkTypeUnspecified: 0
      case .consumer: 1
      case .driver: 2
      case .javascript: 3
      case .unrecognized(let value): value
      }
    }

    public var protoName: String {
      switch self {
      case .sdkTypeUnspecified: "SDK_TYPE_UNSPECIFIED"
      case .consumer: "CONSUMER"
      case .driver: "DRIVER"
      case .javascript: "JAVASCRIPT"
      case .unrecognized(let value): String(value)
      }
    }
  }

  /// `maps.fleetengine.v1.RequestHeader.Platform`: the platform of the calling SDK.
  public enum Platform: ProtoEnum, CaseIterable {
    /// `PLATFORM_UNSPECIFIED` (0): omitted.
    case platformUnspecified
    /// `ANDROID` (1): Android.
    case android
    /// `IOS` (2): iOS.
    case ios
    /// `WEB` (3): the web.
    case web
    /// A value this version does not name, kept as received.
    case unrecognized(Int32)

    public static let allCases: [Platform] = [.platformUnspecified, .android, .ios, .web]

    public init(rawValue: Int32) {
      switch rawValue {
      case 0: self = .platformUnspecified
      case 1: self = .android
      case 2: self = .ios
      case 3: self = .web
      default: self = .unrecognized(rawValue)
      }
    }

    public var rawValue: Int32 {
      switch self {
      case .platformUnspecified: 0
      case .android: 1
      case .ios: 2
      case .web: 3
      case .unrecognized(let value): value
      }
    }

    public var protoName: String {
      switch self {
      case .platformUnspecified: "PLATFORM_UNSPECIFIED"
      case .android: "ANDROID"
      case .ios: "IOS"
      case .web: "WEB"
      case .unrecognized(let value): String(value)
      }
    }
  }

  /// `language_code` (field 1): BCP-47 language code, such as `en-US`.
  public var languageCode: String = ""
  /// `region_code` (field 2): CLDR region code of the request's origin, such as `US`.
  public var regionCode: String = ""
  /// `sdk_version` (field 3): version of the calling SDK, `major.minor.patch`.
  public var sdkVersion: String = ""
  /// `os_version` (field 4): version of the operating system the SDK runs on.
  public var osVersion: String = ""
  /// `device_model` (field 5): model of the device the SDK runs on.
  public var deviceModel: String = ""
  /// `sdk_type` (field 6): the kind of SDK sending the request.
  public var sdkType: SdkType = .sdkTypeUnspecified
  /// `maps_sdk_version` (field 7): version of the Maps SDK the calling SDK depends on.
  public var mapsSdkVersion: String = ""
  /// `nav_sdk_version` (field 8): version of the Navigation SDK the calling SDK depends on.
  public var navSdkVersion: String = ""
  /// `platform` (field 9): the platform of the calling SDK.
  public var platform: Platform = .platformUnspecified
  /// `manufacturer` (field 10): the Android manufacturer of the device.
  public var manufacturer: String = ""
  /// `android_api_level` (field 11): the Android API level of the calling SDK.
  public var androidApiLevel: Int32 = 0
  /// `trace_id` (field 12): an optional ID for logging, to identify the request.
  public var traceId: String = ""
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: languageCode = try reader.readString(tag)
      case 2: regionCode = try reader.readString(tag)
      case 3: sdkVersion = try reader.readString(tag)
      case 4: osVersion = try reader.readString(tag)
      case 5: deviceModel = try reader.readString(tag)
      case 6: sdkType = try reader.readEnum(tag)
      case 7: mapsSdkVersion = try reader.readString(tag)
      case 8: navSdkVersion = try reader.readString(tag)
      case 9: platform = try reader.readEnum(tag)
      case 10: manufacturer = try reader.readString(tag)
      case 11: androidApiLevel = try reader.readInt32(tag)
      case 12: traceId = try reader.readString(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if !languageCode.isEmpty { size += WireSize.string(languageCode, field: 1) }
    if !regionCode.isEmpty { size += WireSize.string(regionCode, field: 2) }
    if !sdkVersion.isEmpty { size += WireSize.string(sdkVersion, field: 3) }
    if !osVersion.isEmpty { size += WireSize.string(osVersion, field: 4) }
    if !deviceModel.isEmpty { size += WireSize.string(deviceModel, field: 5) }
    if sdkType.rawValue != 0 { size += WireSize.enum(sdkType, field: 6) }
    if !mapsSdkVersion.isEmpty { size += WireSize.string(mapsSdkVersion, field: 7) }
    if !navSdkVersion.isEmpty { size += WireSize.string(navSdkVersion, field: 8) }
    if platform.rawValue != 0 { size += WireSize.enum(platform, field: 9) }
    if !manufacturer.isEmpty { size += WireSize.string(manufacturer, field: 10) }
    if androidApiLevel != 0 { size += WireSize.int32(androidApiLevel, field: 11) }
    if !traceId.isEmpty { size += WireSize.string(traceId, field: 12) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if !languageCode.isEmpty { writer.writeString(languageCode, field: 1) }
    if !regionCode.isEmpty { writer.writeString(regionCode, field: 2) }
    if !sdkVersion.isEmpty { writer.writeString(sdkVersion, field: 3) }
    if !osVersion.isEmpty { writer.writeString(osVersion, field: 4) }
    if !deviceModel.isEmpty { writer.writeString(deviceModel, field: 5) }
    if sdkType.rawValue != 0 { writer.writeEnum(sdkType, field: 6) }
    if !mapsSdkVersion.isEmpty { writer.writeString(mapsSdkVersion, field: 7) }
    if !navSdkVersion.isEmpty { writer.writeString(navSdkVersion, field: 8) }
    if platform.rawValue != 0 { writer.writeEnum(platform, field: 9) }
    if !manufacturer.isEmpty { writer.writeString(manufacturer, field: 10) }
    if androidApiLevel != 0 { writer.writeInt32(androidApiLevel, field: 11) }
    if !traceId.isEmpty { writer.writeString(traceId, field: 12) }
    writer.writeUnknown(unknownFields)
  }
}
