// Sources/GRPCProtocol/Exports.swift - the types of lower modules this module's API carries

@_exported public import GRPCValues

@_exported public import struct Primitives.HTTP2ErrorCode
