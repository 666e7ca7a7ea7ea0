// Sources/grpc-interop-client/InteropMessages.swift - the grpc.testing messages the cases need
//
// Hand-written with ProtoWire, like the Fleet Engine messages: BoolValue, Payload,
// EchoStatus, ResponseParameters, SimpleRequest/Response,
// StreamingInputCallRequest/Response and StreamingOutputCallRequest/Response
// (Protos/grpc/testing/messages.proto).
// Only the fields the interop cases use are declared; the rest pass through
// as unknown fields.

import ProtoWire

/// grpc.testing.BoolValue: a bool that can be absent (the message) or false.
struct BoolValue: ProtoMessage {
  static let protoMessageName = "grpc.testing.BoolValue"
  var value = false  // field 1
  var unknownFields = UnknownFields()

  init() {}
  init(_ value: Bool) { self.value = value }

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readBool(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int { unknownFields.count + (value ? WireSize.bool(value, field: 1) : 0) }

  func encodeFields(to writer: inout WireWriter) {
    if value { writer.writeBool(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

struct Payload: ProtoMessage {
  static let protoMessageName = "grpc.testing.Payload"
  var type: Int32 = 0  // field 1, PayloadType (COMPRESSABLE = 0)
  var body: [UInt8] = []  // field 2
  var unknownFields = UnknownFields()

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: type = try reader.readInt32(tag)
      case 2: body = try reader.readBytes(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count
    if type != 0 { size += WireSize.int32(type, field: 1) }
    if !body.isEmpty { size += WireSize.bytes(body, field: 2) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    if type != 0 { writer.writeInt32(type, field: 1) }
    if !body.isEmpty { writer.writeBytes(body, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}

struct EchoStatus: ProtoMessage {
  static let protoMessageName = "grpc.testing.EchoStatus"
  var code: Int32 = 0  // field 1
  var message = ""  // field 2
  var unknownFields = UnknownFields()

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: code = try reader.readInt32(tag)
      case 2: message = try reader.readString(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count
    if code != 0 { size += WireSize.int32(code, field: 1) }
    if !message.isEmpty { size += WireSize.string(message, field: 2) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    if code != 0 { writer.writeInt32(code, field: 1) }
    if !message.isEmpty { writer.writeString(message, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}

struct ResponseParameters: ProtoMessage {
  static let protoMessageName = "grpc.testing.ResponseParameters"
  var size: Int32 = 0  // field 1
  var intervalMicroseconds: Int32 = 0  // field 2 (interval_us)
  var compressed: BoolValue?  // field 3
  var unknownFields = UnknownFields()

  init() {}

  init(size: Int32, intervalMicroseconds: Int32 = 0, compressed: Bool? = nil) {
    self.size = size
    self.intervalMicroseconds = intervalMicroseconds
    self.compressed = compressed.map(BoolValue.init)
  }

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: size = try reader.readInt32(tag)
      case 2: intervalMicroseconds = try reader.readInt32(tag)
      case 3: try reader.readMessage(tag, into: &compressed)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var total = unknownFields.count
    if size != 0 { total += WireSize.int32(size, field: 1) }
    if intervalMicroseconds != 0 { total += WireSize.int32(intervalMicroseconds, field: 2) }
    if let compressed { total += WireSize.message(compressed, field: 3) }
    return total
  }

  func encodeFields(to writer: inout WireWriter) {
    if size != 0 { writer.writeInt32(size, field: 1) }
    if intervalMicroseconds != 0 { writer.writeInt32(intervalMicroseconds, field: 2) }
    if let compressed { writer.writeMessage(compressed, field: 3) }
    writer.writeUnknown(unknownFields)
  }
}

struct SimpleRequest: ProtoMessage {
  static let protoMessageName = "grpc.testing.SimpleRequest"
  var responseSize: Int32 = 0  // field 2
  var payload: Payload?  // field 3
  var responseCompressed: BoolValue?  // field 6
  var responseStatus: EchoStatus?  // field 7
  var expectCompressed: BoolValue?  // field 8
  var unknownFields = UnknownFields()

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 2: responseSize = try reader.readInt32(tag)
      case 3: try reader.readMessage(tag, into: &payload)
      case 6: try reader.readMessage(tag, into: &responseCompressed)
      case 7: try reader.readMessage(tag, into: &responseStatus)
      case 8: try reader.readMessage(tag, into: &expectCompressed)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count
    if responseSize != 0 { size += WireSize.int32(responseSize, field: 2) }
    if let payload { size += WireSize.message(payload, field: 3) }
    if let responseCompressed { size += WireSize.message(responseCompressed, field: 6) }
    if let responseStatus { size += WireSize.message(responseStatus, field: 7) }
    if let expectCompressed { size += WireSize.message(expectCompressed, field: 8) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    if responseSize != 0 { writer.writeInt32(responseSize, field: 2) }
    if let payload { writer.writeMessage(payload, field: 3) }
    if let responseCompressed { writer.writeMessage(responseCompressed, field: 6) }
    if let responseStatus { writer.writeMessage(responseStatus, field: 7) }
    if let expectCompressed { writer.writeMessage(expectCompressed, field: 8) }
    writer.writeUnknown(unknownFields)
  }
}

/// SimpleResponse and StreamingOutputCallResponse: both carry `payload` as field 1.
struct PayloadResponse: ProtoMessage {
  static let protoMessageName = "grpc.testing.SimpleResponse"
  var payload: Payload?  // field 1
  var unknownFields = UnknownFields()

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &payload)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count
    if let payload { size += WireSize.message(payload, field: 1) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    if let payload { writer.writeMessage(payload, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

struct StreamingOutputCallRequest: ProtoMessage {
  static let protoMessageName = "grpc.testing.StreamingOutputCallRequest"
  var responseParameters: [ResponseParameters] = []  // field 2
  var payload: Payload?  // field 3
  var responseStatus: EchoStatus?  // field 7
  var unknownFields = UnknownFields()

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 2: try reader.readRepeatedMessage(tag, into: &responseParameters)
      case 3: try reader.readMessage(tag, into: &payload)
      case 7: try reader.readMessage(tag, into: &responseStatus)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count + WireSize.repeatedMessage(responseParameters, field: 2)
    if let payload { size += WireSize.message(payload, field: 3) }
    if let responseStatus { size += WireSize.message(responseStatus, field: 7) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    writer.writeRepeatedMessage(responseParameters, field: 2)
    if let payload { writer.writeMessage(payload, field: 3) }
    if let responseStatus { writer.writeMessage(responseStatus, field: 7) }
    writer.writeUnknown(unknownFields)
  }
}

struct StreamingInputCallRequest: ProtoMessage {
  static let protoMessageName = "grpc.testing.StreamingInputCallRequest"
  var payload: Payload?  // field 1
  var expectCompressed: BoolValue?  // field 2
  var unknownFields = UnknownFields()

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &payload)
      case 2: try reader.readMessage(tag, into: &expectCompressed)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count
    if let payload { size += WireSize.message(payload, field: 1) }
    if let expectCompressed { size += WireSize.message(expectCompressed, field: 2) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    if let payload { writer.writeMessage(payload, field: 1) }
    if let expectCompressed { writer.writeMessage(expectCompressed, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}

struct StreamingInputCallResponse: ProtoMessage {
  static let protoMessageName = "grpc.testing.StreamingInputCallResponse"
  var aggregatedPayloadSize: Int32 = 0  // field 1
  var unknownFields = UnknownFields()

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: aggregatedPayloadSize = try reader.readInt32(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    unknownFields.count + (aggregatedPayloadSize != 0 ? WireSize.int32(aggregatedPayloadSize, field: 1) : 0)
  }

  func encodeFields(to writer: inout WireWriter) {
    if aggregatedPayloadSize != 0 { writer.writeInt32(aggregatedPayloadSize, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}
