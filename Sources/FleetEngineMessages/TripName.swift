// Sources/FleetEngineMessages/TripName.swift - `providers/{provider}/trips/{trip}`

/// A trip's resource name, `providers/{provider_id}/trips/{trip_id}`, validated as
/// Fleet Engine documents it.
///
/// The provider ID is the Google Cloud project ID of the provider: 6–30
/// characters, lowercase ASCII letters, digits and hyphens, starting with a
/// letter and not ending with a hyphen. Shorter IDs down to one character are
/// accepted too, so simulators and tests can use names like `demo`. The trip ID
/// is 1–64 Unicode scalars, not containing `/`, `:`, `\`, `?` or `#` (the
/// characters Fleet Engine's entity-ID rules exclude) nor control characters.
public struct TripName: Sendable, Hashable, CustomStringConvertible {
  /// The provider (project) ID.
  public let providerID: String
  /// The trip ID.
  public let tripID: String

  /// Validates and splits `name`; `nil` when it is not a valid trip name.
  public init?(parsing name: String) {
    let parts = name.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 4, parts[0] == "providers", parts[2] == "trips" else { return nil }
    guard Self.isValidProviderID(parts[1]), Self.isValidTripID(parts[3]) else { return nil }
    providerID = String(parts[1])
    tripID = String(parts[3])
  }

  /// A name from parts that must already be valid.
  public init?(providerID: String, tripID: String) {
    self.init(parsing: "providers/\(providerID)/trips/\(tripID)")
  }

  /// `providers/{provider_id}/trips/{trip_id}`.
  public var description: String { "providers/\(providerID)/trips/\(tripID)" }

  static func isValidProviderID(_ id: Substring) -> Bool {
    let bytes = Array(id.utf8)
    guard (1...30).contains(bytes.count), let first = bytes.first, first >= UInt8(ascii: "a"),
      first <= UInt8(ascii: "z"), bytes.last != UInt8(ascii: "-")
    else { return false }
    return bytes.allSatisfy { byte in
      (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        || byte == UInt8(ascii: "-")
    }
  }

  static func isValidTripID(_ id: Substring) -> Bool {
    let scalars = id.unicodeScalars
    guard (1...64).contains(scalars.count) else { return false }
    return scalars.allSatisfy { scalar in
      switch scalar {
      case "/", ":", "\\", "?", "#": false
      default: scalar.value >= 0x20 && scalar.value != 0x7F && !(0x80...0x9F).contains(scalar.value)
      }
    }
  }
}
