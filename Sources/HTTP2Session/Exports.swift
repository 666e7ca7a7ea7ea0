// Sources/HTTP2Session/Exports.swift - the types of Primitives this module's API carries

@_exported public import struct Primitives.HTTP2ErrorCode
