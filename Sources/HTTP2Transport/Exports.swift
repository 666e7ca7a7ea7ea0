// Sources/HTTP2Transport/Exports.swift - the types of lower modules this module's API carries

@_exported public import struct TLSCrypto.TLSConfiguration
@_exported public import struct TLSCrypto.TLSServerConfiguration
