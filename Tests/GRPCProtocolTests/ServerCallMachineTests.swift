// Tests/GRPCProtocolTests/ServerCallMachineTests.swift - the per-call server state machine, step by step
//
// What GRPCServerCallMachine sends for each step a service takes, and what it refuses once the call has ended; and
// that what it sends is what GRPCClientCall accepts (the two machines agree on the wire).

import GRPCProtocol
import Testing

private func names(_ fields: Fields?) -> [String] { fields?.map(\.name) ?? [] }
private func value(_ name: String, in fields: Fields?) -> String? { fields?.first { $0.name == name }?.value }

@Suite("GRPCServerCallMachine")
struct ServerCallMachineTests {
  @Test("Headers go once, before the first message; the trailers then carry only the status and trailers")
  func headersThenMessagesThenTrailers() {
    var machine = GRPCServerCallMachine()
    let headers = machine.sendHeaders(["x-a": "1"])
    #expect(names(headers) == [":status", "content-type", "x-a"])
    #expect(machine.sendHeaders(GRPCMetadata()) == nil)
    guard case .send(let first) = machine.sendMessage() else {
      Issue.record("an open call sends")
      return
    }
    #expect(first == nil)
    let trailers = machine.finish(GRPCStatus(code: .notFound, message: "no such trip 100%"), trailers: ["x-t": "2"])
    #expect(names(trailers) == ["grpc-status", "grpc-message", "x-t"])
    #expect(value("grpc-status", in: trailers) == "5")
    #expect(value("grpc-message", in: trailers) == "no such trip 100%25")
    #expect(machine.isClosed)
  }

  @Test("A first message brings the headers; an end with nothing sent is Trailers-Only")
  func implicitHeadersAndTrailersOnly() {
    var streaming = GRPCServerCallMachine()
    guard case .send(let headersFirst) = streaming.sendMessage() else {
      Issue.record("an open call sends")
      return
    }
    #expect(names(headersFirst) == [":status", "content-type"])
    #expect(streaming.headersSent)

    var refused = GRPCServerCallMachine()
    let only = refused.finish(GRPCStatus(code: .unimplemented, message: ""), trailers: GRPCMetadata())
    #expect(names(only) == [":status", "content-type", "grpc-status"])
  }

  @Test("Nothing goes after the end, a reset, or the client's cancellation")
  func nothingAfterTheEnd() {
    var finished = GRPCServerCallMachine()
    _ = finished.finish(.ok, trailers: GRPCMetadata())
    #expect(finished.sendHeaders(GRPCMetadata()) == nil)
    guard case .tooLate = finished.sendMessage() else {
      Issue.record("a finished call sends nothing")
      return
    }
    #expect(finished.finish(.ok, trailers: GRPCMetadata()) == nil)
    let step1 = finished.reset()
    #expect(!step1)
    let step2 = finished.peerClosed()
    #expect(!step2)

    var reset = GRPCServerCallMachine()
    let step3 = reset.reset()
    #expect(step3)
    #expect(reset.finish(.ok, trailers: GRPCMetadata()) == nil)

    var cancelled = GRPCServerCallMachine()
    let step4 = cancelled.peerClosed()
    #expect(step4)
    let step5 = cancelled.peerClosed()
    #expect(!step5)
    #expect(cancelled.isClosed)
    guard case .tooLate = cancelled.sendMessage() else {
      Issue.record("a cancelled call sends nothing")
      return
    }
  }

  @Test("What the server machine sends, the client machine accepts: headers, a message, OK")
  func machinesAgree() {
    var server = GRPCServerCallMachine()
    var client = GRPCClientCall(kind: .unary, maxReceiveMessageSize: 1024)
    guard case .send(let headers?) = server.sendMessage() else {
      Issue.record("the first message brings headers")
      return
    }
    #expect(client.receiveHeaders(headers, endStream: false).deliveredHeaders != nil)
    let (action, messages) = client.data(frames([7, 8, 9]))
    #expect(action == .none)
    #expect(messages == [[7, 8, 9]])
    let trailers = server.finish(.ok, trailers: GRPCMetadata()) ?? []
    #expect(client.receiveHeaders(trailers, endStream: true) == .finish(.ok))
  }

  @Test("A Trailers-Only refusal from the server machine reaches the client machine as its status")
  func trailersOnlyAgrees() {
    var server = GRPCServerCallMachine()
    var client = GRPCClientCall(kind: .serverStreaming, maxReceiveMessageSize: 1024)
    let only = server.finish(GRPCStatus(code: .permissionDenied, message: "no"), trailers: GRPCMetadata()) ?? []
    #expect(client.receiveHeaders(only, endStream: true) == .finish(GRPCStatus(code: .permissionDenied, message: "no")))
  }
}
