// Sources/Primitives/Release.swift - the package's release version
//
// Every module and tool of the package can see this one constant: the tools print it for
// `--version`, the consumer API sends it in RequestHeader.sdk_version. CHANGELOG.md's newest
// entry names the same version (a test checks).

/// The JourneySharing release this build is.
package enum JourneySharingRelease {
  /// The version, `MAJOR.MINOR.PATCH`.
  package static let version = "0.8.0"
}
