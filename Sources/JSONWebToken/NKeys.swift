// Sources/JSONWebToken/NKeys.swift - NATS nkeys: Ed25519 keys in NATS' text form, and signing with them
//
// NATS names its keys (operators, accounts, users) with nkeys: an Ed25519 key pair written as base32 text with
// a prefix letter for its role and a CRC-16 at the end. A seed (`SU…` for a user) holds the private key; the
// public key (`U…`) is what a server's configuration lists. A relay given only a user's seed file needs the
// public key to connect (libnats asks for both), and tests that run a NATS server with decentralized
// authentication need to sign the JWTs of an operator, an account and a user. Both are here, on TLSCrypto's
// Ed25519 (OpenSSL's).

internal import TLSCrypto

/// An Ed25519 key pair in NATS' nkey form (see the file comment).
package struct NKey: Sendable {
  /// The role a key plays, and the prefix letter of its public key.
  package enum Role: UInt8, Sendable, CaseIterable {
    /// `O…`
    case `operator` = 112  // 14 << 3
    /// `A…`
    case account = 0
    /// `U…`
    case user = 160  // 20 << 3
    /// `N…`
    case server = 104  // 13 << 3
  }

  /// The role.
  package let role: Role
  /// The 32-byte Ed25519 seed (the private key).
  private let seed: [UInt8]
  /// The 32-byte Ed25519 public key.
  package let rawPublicKey: [UInt8]

  private static let seedPrefix: UInt8 = 18 << 3

  /// The key pair of `seed`, a seed in nkey text form (`SU…`, `SA…`, `SO…`).
  ///
  /// - Throws: ``JWTError`` (`invalidKey`) when the text is not a seed, never quoting it.
  package init(seed text: String) throws(JWTError) {
    let trimmed = text.filter { !$0.isWhitespace }
    guard let raw = Base32.decode(Array(trimmed.utf8)), raw.count == 36 else {
      throw JWTError(.invalidKey, "not an nkey seed (base32 of 36 bytes)")
    }
    guard crc16(raw[0..<34]) == UInt16(raw[34]) | UInt16(raw[35]) << 8 else {
      throw JWTError(.invalidKey, "the nkey seed's checksum does not match")
    }
    guard raw[0] & 0xF8 == Self.seedPrefix else { throw JWTError(.invalidKey, "the nkey is not a seed") }
    let prefix = (raw[0] & 0x07) << 5 | (raw[1] & 0xF8) >> 3
    guard let role = Role(rawValue: prefix) else { throw JWTError(.invalidKey, "the nkey seed has an unknown role") }
    try self.init(role: role, seedBytes: Array(raw[2..<34]))
  }

  /// A new random key pair for `role`.
  package static func generate(role: Role) throws(JWTError) -> NKey {
    let seed = try JWTError.usingKey { () throws(CryptoError) in try SecureRandom.bytes(32) }
    return try NKey(role: role, seedBytes: seed)
  }

  private init(role: Role, seedBytes: [UInt8]) throws(JWTError) {
    self.role = role
    self.seed = seedBytes
    rawPublicKey = try JWTError.usingKey { () throws(CryptoError) in try Ed25519.publicKey(seed: seedBytes) }
  }

  /// The public key in nkey text form (`U…` for a user).
  package var publicKey: String { Self.encode([role.rawValue] + rawPublicKey) }

  /// The seed in nkey text form (`SU…` for a user): a secret.
  package var seedText: String {
    Self.encode([Self.seedPrefix | role.rawValue >> 5, (role.rawValue & 31) << 3] + seed)
  }

  /// The Ed25519 signature of `message`.
  package func sign(_ message: [UInt8]) throws(JWTError) -> [UInt8] {
    try JWTError.usingKey { () throws(CryptoError) in try Ed25519.sign(seed: seed, message: message) }
  }

  /// `raw` with its CRC-16 appended, in base32 without padding.
  private static func encode(_ raw: [UInt8]) -> String {
    let checksum = crc16(raw[...])
    return Base32.encode(raw + [UInt8(checksum & 0xFF), UInt8(checksum >> 8)])
  }
}

/// The CRC-16 of nkeys (polynomial 0x1021, initial value 0: CRC-16/XMODEM).
private func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
  var crc: UInt16 = 0
  for byte in bytes {
    crc ^= UInt16(byte) << 8
    for _ in 0..<8 { crc = crc & 0x8000 != 0 ? crc << 1 ^ 0x1021 : crc << 1 }
  }
  return crc
}

/// Base32 (RFC 4648, upper case, no padding), as nkeys use it.
enum Base32 {
  private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

  static func encode(_ bytes: [UInt8]) -> String {
    var output: [UInt8] = []
    var buffer: UInt32 = 0
    var bits = 0
    for byte in bytes {
      buffer = buffer << 8 | UInt32(byte)
      bits += 8
      while bits >= 5 {
        output.append(alphabet[Int(buffer >> UInt32(bits - 5) & 31)])
        bits -= 5
      }
    }
    if bits > 0 { output.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
    return String(decoding: output, as: UTF8.self)
  }

  static func decode(_ text: [UInt8]) -> [UInt8]? {
    var output: [UInt8] = []
    var buffer: UInt32 = 0
    var bits = 0
    for character in text {
      let value: UInt8
      switch character {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
      case UInt8(ascii: "2")...UInt8(ascii: "7"): value = character - UInt8(ascii: "2") + 26
      default: return nil
      }
      buffer = buffer << 5 | UInt32(value)
      bits += 5
      if bits >= 8 {
        output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
        bits -= 8
      }
    }
    return output
  }
}
