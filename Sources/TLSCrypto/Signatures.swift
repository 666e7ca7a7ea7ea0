// Sources/TLSCrypto/Signatures.swift - HMAC-SHA-256, RSA-SHA-256 and Ed25519 through OpenSSL 3's libcrypto
//
// What JSONWebToken signs and verifies with (HS256, RS256, NATS nkeys), so that no module but this
// one touches OpenSSL. Every OpenSSL object made here is freed before the function returns (defer),
// and OpenSSL's thread-local error queue is emptied on the way out, so a failed key load here never
// shows up as the reason of an unrelated TLS error later. Keys are parsed from PEM on every call;
// nothing is cached.

import COpenSSL

/// A key that cannot be used, or a cryptographic operation that failed. The message never quotes key
/// material; it may end with OpenSSL's reason.
package struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What went wrong.
  package var message: String
  package init(_ message: String) { self.message = message }
  package var description: String { message }
}

/// HMAC-SHA-256 and RSASSA-PKCS1-v1_5 with SHA-256, with the key sizes RFC 7518 requires.
package enum Signatures {
  /// The shortest HMAC secret accepted: the size of the SHA-256 output (RFC 7518 section 3.2).
  package static let minimumSecretLength = 32
  /// The smallest RSA modulus accepted, in bits (RFC 7518 section 3.3).
  package static let minimumRSABits: Int32 = 2048

  // MARK: - HS256

  /// HMAC-SHA-256 of `message` under `secret`.
  package static func hmacSHA256(secret: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
    guard secret.count >= minimumSecretLength else {
      throw CryptoError(
        "an HS256 secret must be at least \(minimumSecretLength) bytes long, this one has \(secret.count)"
      )
    }
    guard secret.count <= Int(Int32.max) else { throw CryptoError("the HS256 secret is too long") }
    defer { ERR_clear_error() }
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    // The arrays are passed as pointers valid for the duration of the call; `digest` has EVP_MAX_MD_SIZE bytes.
    guard HMAC(EVP_sha256(), secret, Int32(secret.count), message, message.count, &digest, &length) != nil else {
      throw openSSLError("HMAC-SHA-256 failed")
    }
    return Array(digest.prefix(Int(length)))
  }

  /// Whether `signature` is the HMAC-SHA-256 of `message` under `secret`, compared in constant time.
  package static func verifyHMACSHA256(secret: [UInt8], message: [UInt8], signature: [UInt8]) throws(CryptoError)
    -> Bool
  {
    let expected = try hmacSHA256(secret: secret, message: message)
    // The length of a MAC is public; only its contents must be compared without early exit.
    guard signature.count == expected.count else { return false }
    // Both arrays are passed as pointers valid for the call and hold `expected.count` bytes.
    return CRYPTO_memcmp(expected, signature, expected.count) == 0
  }

  // MARK: - RS256

  /// The RSASSA-PKCS1-v1_5 SHA-256 signature of `message` under the private key in `pem`.
  package static func rsaSHA256Sign(privateKeyPEM pem: String, message: [UInt8]) throws(CryptoError) -> [UInt8] {
    defer { ERR_clear_error() }
    let key = try loadPrivateKey(pem)
    defer { EVP_PKEY_free(key) }
    try checkRSA(key)
    guard let context = EVP_MD_CTX_new() else { throw openSSLError("EVP_MD_CTX_new failed") }
    defer { EVP_MD_CTX_free(context) }
    guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
      throw openSSLError("the RSA private key cannot sign")
    }
    var length = 0
    // `message` is passed as a pointer valid for the call; a null output asks for the signature's size.
    guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
      throw openSSLError("RSA signing failed")
    }
    var signature = [UInt8](repeating: 0, count: length)
    // `signature` has the `length` bytes OpenSSL asked for; `length` is updated to the bytes written.
    guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
      throw openSSLError("RSA signing failed")
    }
    return Array(signature.prefix(length))
  }

  /// Whether `signature` is a valid RS256 signature of `message` under the public key (or certificate) in `pem`.
  package static func rsaSHA256Verify(publicKeyPEM pem: String, message: [UInt8], signature: [UInt8])
    throws(CryptoError) -> Bool
  {
    defer { ERR_clear_error() }
    let key = try loadPublicKey(pem)
    defer { EVP_PKEY_free(key) }
    try checkRSA(key)
    guard let context = EVP_MD_CTX_new() else { throw openSSLError("EVP_MD_CTX_new failed") }
    defer { EVP_MD_CTX_free(context) }
    guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
      throw openSSLError("the RSA public key cannot verify")
    }
    // Both arrays are passed as pointers valid for the call, with their own counts.
    return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
  }

  // MARK: - Keys

  /// Throws unless `pem` holds an RSA public key (or certificate) of at least 2048 bits: for checking keys
  /// once, when they are configured.
  package static func checkPublicKey(_ pem: String) throws(CryptoError) {
    defer { ERR_clear_error() }
    let key = try loadPublicKey(pem)
    defer { EVP_PKEY_free(key) }
    try checkRSA(key)
  }

  /// Rejects keys other than RSA (PKCS#1 v1.5 with SHA-256 is RSA-only) and moduli under 2048 bits.
  private static func checkRSA(_ key: OpaquePointer) throws(CryptoError) {
    guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
      throw CryptoError("an RS256 key must be an RSA key")
    }
    let bits = EVP_PKEY_get_bits(key)
    guard bits >= minimumRSABits else {
      throw CryptoError("an RS256 key must have at least \(minimumRSABits) bits, this one has \(bits)")
    }
  }

  /// An unencrypted private key from PEM. The caller frees it with `EVP_PKEY_free`.
  private static func loadPrivateKey(_ pem: String) throws(CryptoError) -> OpaquePointer {
    let key = withMemoryBIO(pem) { bio in
      // A callback that supplies no passphrase: encrypted keys fail instead of prompting on the terminal.
      PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
    }
    guard let key else {
      throw openSSLError("the RS256 private key is not an unencrypted PEM private key")
    }
    return key
  }

  /// A public key from a `PUBLIC KEY` or `CERTIFICATE` PEM block. The caller frees it with `EVP_PKEY_free`.
  private static func loadPublicKey(_ pem: String) throws(CryptoError) -> OpaquePointer {
    if let key = withMemoryBIO(pem, { bio in PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in -1 }, nil) }) {
      return key
    }
    ERR_clear_error()
    let fromCertificate = withMemoryBIO(pem) { bio -> OpaquePointer? in
      guard let certificate = PEM_read_bio_X509(bio, nil, { _, _, _, _ in -1 }, nil) else { return nil }
      defer { X509_free(certificate) }
      // X509_get_pubkey returns a new reference, which outlives the certificate.
      return X509_get_pubkey(certificate)
    }
    guard let key = fromCertificate else {
      throw openSSLError("the RS256 public key is not a PEM public key or certificate")
    }
    return key
  }

  /// Runs `body` with a read-only memory BIO over the UTF-8 of `pem`, freed afterwards.
  private static func withMemoryBIO(_ pem: String, _ body: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
    let bytes = Array(pem.utf8)
    guard bytes.count <= Int(Int32.max) else { return nil }
    return bytes.withUnsafeBytes { raw in
      // The BIO reads `raw` in place and is freed before the closure returns, while `raw` is still valid.
      guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
      defer { BIO_free(bio) }
      return body(bio)
    }
  }

}

/// An error whose message ends with OpenSSL's first queued reason (never key material); the queue is emptied.
private func openSSLError(_ what: String) -> CryptoError {
  let code = ERR_peek_error()
  ERR_clear_error()
  guard code != 0, let reason = ERR_reason_error_string(code) else { return CryptoError(what) }
  // Reason strings are static, NUL-terminated tables inside libcrypto, valid for the process's lifetime.
  return CryptoError("\(what) (\(String(cString: reason)))")
}

/// Ed25519 (RFC 8032) from a raw 32-byte seed: the keys NATS calls nkeys.
package enum Ed25519 {
  /// The 32-byte public key of the 32-byte `seed`.
  package static func publicKey(seed: [UInt8]) throws(CryptoError) -> [UInt8] {
    let key = try privateKey(seed)
    defer { EVP_PKEY_free(key) }
    var publicKey = [UInt8](repeating: 0, count: 32)
    var length = 32
    guard EVP_PKEY_get_raw_public_key(key, &publicKey, &length) == 1, length == 32 else {
      ERR_clear_error()
      throw CryptoError("no Ed25519 public key for the seed")
    }
    return publicKey
  }

  /// The 64-byte signature of `message` under the 32-byte `seed`.
  package static func sign(seed: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
    let key = try privateKey(seed)
    defer { EVP_PKEY_free(key) }
    guard let context = EVP_MD_CTX_new() else {
      ERR_clear_error()
      throw CryptoError("EVP_MD_CTX_new failed")
    }
    defer { EVP_MD_CTX_free(context) }
    var signature = [UInt8](repeating: 0, count: 64)
    var length = 64
    guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1,
      EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == 64
    else {
      ERR_clear_error()
      throw CryptoError("Ed25519 signing failed")
    }
    return signature
  }

  /// The private key of `seed`. The caller frees it with `EVP_PKEY_free`.
  private static func privateKey(_ seed: [UInt8]) throws(CryptoError) -> OpaquePointer {
    guard seed.count == 32, let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, 32) else {
      ERR_clear_error()
      throw CryptoError("the seed is not an Ed25519 key")
    }
    return key
  }
}

/// Bytes from OpenSSL's cryptographically secure generator.
package enum SecureRandom {
  /// `count` random bytes.
  package static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
    guard count >= 0 else { throw CryptoError("a negative number of random bytes") }
    var bytes = [UInt8](repeating: 0, count: count)
    guard count <= Int(Int32.max), RAND_bytes(&bytes, Int32(count)) == 1 else {
      ERR_clear_error()
      throw CryptoError("no random bytes")
    }
    return bytes
  }
}
