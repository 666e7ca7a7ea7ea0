// Sources/JSONWebToken/Signatures.swift - HS256 and RS256 through OpenSSL 3's libcrypto
//
// Every OpenSSL object made here is freed before the function returns (defer),
// and OpenSSL's thread-local error queue is emptied on the way out, so a failed
// key load here never shows up as the reason of an unrelated TLS error later.
// Keys are parsed from PEM on every call; nothing is cached.

import COpenSSL

enum Signatures {
  /// The shortest HMAC secret accepted: the size of the SHA-256 output (RFC 7518 section 3.2).
  static let minimumSecretLength = 32
  /// The smallest RSA modulus accepted, in bits (RFC 7518 section 3.3).
  static let minimumRSABits: Int32 = 2048

  // MARK: - HS256

  /// HMAC-SHA-256 of `message` under `secret`.
  static func hmacSHA256(secret: [UInt8], message: [UInt8]) throws(JWTError) -> [UInt8] {
    guard secret.count >= minimumSecretLength else {
      throw JWTError(
        .invalidKey,
        "an HS256 secret must be at least \(minimumSecretLength) bytes long, this one has \(secret.count)"
      )
    }
    guard secret.count <= Int(Int32.max) else { throw JWTError(.invalidKey, "the HS256 secret is too long") }
    defer { ERR_clear_error() }
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    // The arrays are passed as pointers valid for the duration of the call; `digest` has EVP_MAX_MD_SIZE bytes.
    guard HMAC(EVP_sha256(), secret, Int32(secret.count), message, message.count, &digest, &length) != nil else {
      throw openSSLError(.invalidKey, "HMAC-SHA-256 failed")
    }
    return Array(digest.prefix(Int(length)))
  }

  /// Whether `signature` is the HMAC-SHA-256 of `message` under `secret`, compared in constant time.
  static func verifyHMACSHA256(secret: [UInt8], message: [UInt8], signature: [UInt8]) throws(JWTError) -> Bool {
    let expected = try hmacSHA256(secret: secret, message: message)
    // The length of a MAC is public; only its contents must be compared without early exit.
    guard signature.count == expected.count else { return false }
    // Both arrays are passed as pointers valid for the call and hold `expected.count` bytes.
    return CRYPTO_memcmp(expected, signature, expected.count) == 0
  }

  // MARK: - RS256

  /// The RSASSA-PKCS1-v1_5 SHA-256 signature of `message` under the private key in `pem`.
  static func rsaSHA256Sign(privateKeyPEM pem: String, message: [UInt8]) throws(JWTError) -> [UInt8] {
    defer { ERR_clear_error() }
    let key = try loadPrivateKey(pem)
    defer { EVP_PKEY_free(key) }
    try checkRSA(key)
    guard let context = EVP_MD_CTX_new() else { throw openSSLError(.invalidKey, "EVP_MD_CTX_new failed") }
    defer { EVP_MD_CTX_free(context) }
    guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
      throw openSSLError(.invalidKey, "the RSA private key cannot sign")
    }
    var length = 0
    // `message` is passed as a pointer valid for the call; a null output asks for the signature's size.
    guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
      throw openSSLError(.invalidKey, "RSA signing failed")
    }
    var signature = [UInt8](repeating: 0, count: length)
    // `signature` has the `length` bytes OpenSSL asked for; `length` is updated to the bytes written.
    guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
      throw openSSLError(.invalidKey, "RSA signing failed")
    }
    return Array(signature.prefix(length))
  }

  /// Whether `signature` is a valid RS256 signature of `message` under the public key (or certificate) in `pem`.
  static func rsaSHA256Verify(publicKeyPEM pem: String, message: [UInt8], signature: [UInt8]) throws(JWTError) -> Bool {
    defer { ERR_clear_error() }
    let key = try loadPublicKey(pem)
    defer { EVP_PKEY_free(key) }
    try checkRSA(key)
    guard let context = EVP_MD_CTX_new() else { throw openSSLError(.invalidKey, "EVP_MD_CTX_new failed") }
    defer { EVP_MD_CTX_free(context) }
    guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
      throw openSSLError(.invalidKey, "the RSA public key cannot verify")
    }
    // Both arrays are passed as pointers valid for the call, with their own counts.
    return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
  }

  // MARK: - Keys

  /// Throws unless `pem` holds an RSA public key (or certificate) of at least 2048 bits: for checking keys
  /// once, when they are configured.
  static func checkPublicKey(_ pem: String) throws(JWTError) {
    defer { ERR_clear_error() }
    let key = try loadPublicKey(pem)
    defer { EVP_PKEY_free(key) }
    try checkRSA(key)
  }

  /// Rejects keys other than RSA (PKCS#1 v1.5 with SHA-256 is RSA-only) and moduli under 2048 bits.
  private static func checkRSA(_ key: OpaquePointer) throws(JWTError) {
    guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
      throw JWTError(.invalidKey, "an RS256 key must be an RSA key")
    }
    let bits = EVP_PKEY_get_bits(key)
    guard bits >= minimumRSABits else {
      throw JWTError(.invalidKey, "an RS256 key must have at least \(minimumRSABits) bits, this one has \(bits)")
    }
  }

  /// An unencrypted private key from PEM. The caller frees it with `EVP_PKEY_free`.
  private static func loadPrivateKey(_ pem: String) throws(JWTError) -> OpaquePointer {
    let key = withMemoryBIO(pem) { bio in
      // A callback that supplies no passphrase: encrypted keys fail instead of prompting on the terminal.
      PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
    }
    guard let key else {
      throw openSSLError(.invalidKey, "the RS256 private key is not an unencrypted PEM private key")
    }
    return key
  }

  /// A public key from a `PUBLIC KEY` or `CERTIFICATE` PEM block. The caller frees it with `EVP_PKEY_free`.
  private static func loadPublicKey(_ pem: String) throws(JWTError) -> OpaquePointer {
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
      throw openSSLError(.invalidKey, "the RS256 public key is not a PEM public key or certificate")
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

  /// A `kind` error whose message ends with OpenSSL's first queued reason (never key material).
  private static func openSSLError(_ kind: JWTError.Kind, _ what: String) -> JWTError {
    let code = ERR_peek_error()
    ERR_clear_error()
    guard code != 0, let reason = ERR_reason_error_string(code) else { return JWTError(kind, what) }
    // Reason strings are static, NUL-terminated tables inside libcrypto, valid for the process's lifetime.
    return JWTError(kind, "\(what) (\(String(cString: reason)))")
  }
}
