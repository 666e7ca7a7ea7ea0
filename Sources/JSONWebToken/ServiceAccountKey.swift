// Sources/JSONWebToken/ServiceAccountKey.swift - a Google service-account JSON key file
//
// The key file Google Cloud gives for a service account is one JSON object with, among
// others, `type` ("service_account"), `client_email`, `private_key_id` and `private_key`
// (a PKCS#8 PEM). Fleet Engine JWTs are signed with that key (RS256), carry its id as the
// header's `kid`, and name the email as `iss` and `sub`.

import TLSCrypto

/// The parts of a Google service-account JSON key that sign Fleet Engine tokens.
///
/// Its description never shows the private key.
package struct ServiceAccountKey: Sendable, CustomStringConvertible {
  /// `client_email`: the service account, the tokens' `iss` and `sub`.
  package var clientEmail: String
  /// `private_key_id`: the key's id, the tokens' `kid`.
  package var privateKeyID: String
  /// `private_key`: the RSA private key as PEM.
  package var privateKeyPEM: String

  /// Reads a key file's JSON.
  ///
  /// - Throws: ``JWTError`` (`malformed`) when the bytes are not a JSON object, the `type` is
  ///   present and not `service_account`, or a required member is missing or not a string;
  ///   (`invalidKey`) when `private_key` is not an RSA private key of at least 2048 bits.
  package init(json bytes: [UInt8]) throws(JWTError) {
    let object = try JSONReader.parseObject(bytes, context: "service account key")
    func string(_ name: String) throws(JWTError) -> String {
      guard let value = object[name] else {
        throw JWTError(.malformed, "the service account key has no \"\(name)\"")
      }
      guard case .string(let text) = value, !text.isEmpty else {
        throw JWTError(.malformed, "the service account key's \"\(name)\" is not a non-empty string")
      }
      return text
    }
    if let type = object["type"], type != .string("service_account") {
      throw JWTError(.malformed, "the key's \"type\" is not \"service_account\"")
    }
    clientEmail = try string("client_email")
    privateKeyID = try string("private_key_id")
    privateKeyPEM = try string("private_key")
    // Fail here, with a clear reason, rather than at the first token.
    _ = try JWTError.usingKey { () throws(CryptoError) in
      try Signatures.rsaSHA256Sign(privateKeyPEM: privateKeyPEM, message: [])
    }
  }

  /// `service account <email> (key <id>)`: never the private key.
  package var description: String { "service account \(clientEmail) (key \(privateKeyID))" }
}
