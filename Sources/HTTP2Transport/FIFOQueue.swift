// Sources/HTTP2Transport/FIFOQueue.swift - a first-in first-out queue with O(1) pops

/// An array with a moving head: `popFirst` is O(1) (amortized), where `Array.removeFirst`
/// shifts every element, which made queuing tens of thousands of calls quadratic.
struct FIFOQueue<Element>: Sequence {
  private var storage: [Element] = []
  private var head = 0

  var isEmpty: Bool { head == storage.count }
  var count: Int { storage.count - head }

  mutating func append(_ element: Element) { storage.append(element) }

  mutating func popFirst() -> Element? {
    guard head < storage.count else { return nil }
    let element = storage[head]
    head += 1
    if head == storage.count {
      storage.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 1024 && head * 2 >= storage.count {
      storage.removeFirst(head)
      head = 0
    }
    return element
  }

  mutating func removeAll(where shouldBeRemoved: (Element) -> Bool) {
    storage = storage[head...].filter { !shouldBeRemoved($0) }
    head = 0
  }

  mutating func removeAll() {
    storage.removeAll()
    head = 0
  }

  func makeIterator() -> ArraySlice<Element>.Iterator { storage[head...].makeIterator() }
}
