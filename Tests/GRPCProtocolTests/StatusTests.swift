// Tests/GRPCProtocolTests/StatusTests.swift - status codes, grpc-status parsing, GRPCStatus and GRPCError

import Foundation
import GRPCProtocol
import Testing

@Suite("Status codes")
struct StatusCodeTests {
  /// Every code with its wire number and canonical name, from statuscodes.md.
  static let table: [(GRPCStatusCode, Int, String)] = [
    (.ok, 0, "OK"),
    (.cancelled, 1, "CANCELLED"),
    (.unknown, 2, "UNKNOWN"),
    (.invalidArgument, 3, "INVALID_ARGUMENT"),
    (.deadlineExceeded, 4, "DEADLINE_EXCEEDED"),
    (.notFound, 5, "NOT_FOUND"),
    (.alreadyExists, 6, "ALREADY_EXISTS"),
    (.permissionDenied, 7, "PERMISSION_DENIED"),
    (.resourceExhausted, 8, "RESOURCE_EXHAUSTED"),
    (.failedPrecondition, 9, "FAILED_PRECONDITION"),
    (.aborted, 10, "ABORTED"),
    (.outOfRange, 11, "OUT_OF_RANGE"),
    (.unimplemented, 12, "UNIMPLEMENTED"),
    (.internalError, 13, "INTERNAL"),
    (.unavailable, 14, "UNAVAILABLE"),
    (.dataLoss, 15, "DATA_LOSS"),
    (.unauthenticated, 16, "UNAUTHENTICATED"),
  ]

  @Test("number, name and description of every code", arguments: table)
  func numberAndName(code: GRPCStatusCode, number: Int, name: String) {
    #expect(code.rawValue == number)
    #expect(code.name == name)
    #expect(code.description == "\(name) (\(number))")
    #expect(GRPCStatusCode(rawValue: number) == code)
  }

  @Test("allCases is exactly the seventeen codes, in order")
  func allCases() {
    #expect(GRPCStatusCode.allCases.map(\.rawValue) == Array(0...16))
    #expect(Set(GRPCStatusCode.allCases.map(\.name)).count == 17)
  }

  @Test("grpc-status parses every code's decimal form", arguments: table)
  func parsesEveryCode(code: GRPCStatusCode, number: Int, name: String) {
    #expect(GRPCStatusCode.parse(grpcStatusHeader: String(number)) == code)
  }

  @Test(
    "grpc-status values that are not plain decimals or not known codes are UNKNOWN",
    arguments: [
      "",  // empty
      "17", "20", "99", "100", "255", "4294967296",  // beyond the known codes
      "99999999999999999999999999",  // would overflow any integer type
      "00", "01", "014", "0014",  // leading zeros
      "-1", "+1", "-0",  // signs
      " 1", "1 ", "1\t", "\n14",  // whitespace
      "1.0", "1e1", "0x1", "14a", "a", "OK", "UNAVAILABLE",  // not decimal
      "١٤",  // Arabic-Indic digits are not ASCII digits
    ])
  func unparsable(value: String) {
    #expect(GRPCStatusCode.parse(grpcStatusHeader: value) == .unknown)
  }
}

@Suite("GRPCStatus and GRPCError")
struct StatusAndErrorTests {
  @Test("GRPCStatus.ok is OK with an empty message")
  func okStatus() {
    #expect(GRPCStatus.ok.code == .ok)
    #expect(GRPCStatus.ok.message.isEmpty)
    #expect(GRPCStatus.ok.isOK)
    #expect(GRPCStatus.ok.description == "OK (0)")
    #expect(!GRPCStatus(code: .cancelled).isOK)
  }

  @Test("status descriptions include the message when there is one")
  func statusDescription() {
    #expect(
      GRPCStatus(code: .unavailable, message: "connection refused").description
        == "UNAVAILABLE (14): connection refused")
    #expect(GRPCStatus(code: .internalError).description == "INTERNAL (13)")
  }

  @Test("GRPCError bridges to NSError with domain io.grpc and the status number", arguments: GRPCStatusCode.allCases)
  func nsErrorBridging(code: GRPCStatusCode) {
    let error = GRPCError(code: code, message: "boom")
    let nsError = error as NSError
    #expect(nsError.domain == "io.grpc")
    #expect(GRPCError.errorDomain == "io.grpc")
    #expect(nsError.code == code.rawValue)
    #expect(error.errorCode == code.rawValue)
    #expect(nsError.localizedDescription == "\(code.name) (\(code.rawValue)): boom")
    #expect(error.errorUserInfo[NSLocalizedDescriptionKey] as? String == error.description)
  }

  @Test("GRPCError description, status and initializers")
  func errorBasics() {
    let error = GRPCError(code: .unavailable, message: "connection refused")
    #expect(error.description == "UNAVAILABLE (14): connection refused")
    #expect(error.trailers.isEmpty)
    #expect(error.status == GRPCStatus(code: .unavailable, message: "connection refused"))

    var trailers = GRPCMetadata()
    trailers.add("retry-after", "3")
    let fromStatus = GRPCError(status: GRPCStatus(code: .resourceExhausted, message: "quota"), trailers: trailers)
    #expect(fromStatus.code == .resourceExhausted)
    #expect(fromStatus.message == "quota")
    #expect(fromStatus.trailers.first("retry-after") == "3")
    #expect(fromStatus != GRPCError(code: .resourceExhausted, message: "quota"))
    #expect(GRPCError(code: .cancelled, message: "").description == "CANCELLED (1)")
  }

  @Test("a status's cause travels into GRPCError and back; equality and hashing ignore it")
  func causeCarried() {
    struct Refused: Error, Equatable { var port: Int }
    let message = "connect to 127.0.0.1:1: Connection refused"
    let status = GRPCStatus(code: .unavailable, message: message, cause: Refused(port: 1))
    #expect(status.cause as? Refused == Refused(port: 1))
    #expect(status == GRPCStatus(code: .unavailable, message: message))
    #expect(status.hashValue == GRPCStatus(code: .unavailable, message: message).hashValue)
    #expect(status.description == "UNAVAILABLE (14): connect to 127.0.0.1:1: Connection refused")

    let error = GRPCError(status: status)
    #expect(error.cause as? Refused == Refused(port: 1))
    #expect(error.status.cause as? Refused == Refused(port: 1))
    #expect(GRPCError(status: error.status).cause as? Refused == Refused(port: 1))
    #expect(error == GRPCError(code: .unavailable, message: "connect to 127.0.0.1:1: Connection refused"))
    #expect(GRPCError(status: GRPCStatus(code: .unavailable)).cause == nil)
    #expect(GRPCStatus.ok.cause == nil)
  }

  @Test("descriptions show code and message only, never metadata values")
  func noMetadataInDescriptions() {
    var trailers = GRPCMetadata()
    trailers.add("authorization", "Bearer secret-token")
    let error = GRPCError(code: .unauthenticated, message: "token expired", trailers: trailers)
    #expect(error.description == "UNAUTHENTICATED (16): token expired")
    #expect(!(error as NSError).localizedDescription.contains("secret-token"))
    #expect(!String(describing: error).contains("secret-token"))
  }

  @Test("GRPCError is a Swift Error that can be caught as itself")
  func throwAndCatch() {
    func fail() throws { throw GRPCError(code: .notFound, message: "no such trip") }
    #expect(throws: GRPCError(code: .notFound, message: "no such trip")) { try fail() }
  }
}
