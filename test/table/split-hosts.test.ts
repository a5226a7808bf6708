// Which hosts the SNI split sends to node:http2 (table/listener-needs.ts, serving/tls-split.ts):
// the entry the table's own lookup selects for a name (exact or alias, then `*.suffix` for one
// first label, then the hostless rules) holds a gRPC route, or every host needs it (the
// default route does). And when a new table moves a host Bun.serve served to node:http2.
import { describe, expect, test } from "bun:test";
import { everyHostNeedsNode, hostNeedsNode, hostsMovedToNode } from "../../src/table/listener-needs.ts";
import { makeBackend, makeTable, type RouteSpec } from "../proxy/helpers.ts";

const web = (host: string | null): RouteSpec => ({ host, backend: makeBackend([1]) });
const grpc = (host: string | null, path = "/"): RouteSpec => ({ host, path, backend: makeBackend([2], { scheme: "grpc" }) });

describe("hostNeedsNode", () => {
  test("exact, wildcard (one first label) and hostless entries, as the lookup selects them", () => {
    const t = makeTable([web("web.test"), grpc("rpc.test", "/svc.Echo"), grpc("*.wild.test"), web("a.wild.test")]);
    expect(hostNeedsNode(t, "rpc.test")).toBe(true); // one gRPC path makes the host node:http2's
    expect(hostNeedsNode(t, "web.test")).toBe(false);
    expect(hostNeedsNode(t, "b.wild.test")).toBe(true);
    expect(hostNeedsNode(t, "a.wild.test")).toBe(false); // its exact entry wins
    expect(hostNeedsNode(t, "x.b.wild.test")).toBe(false); // two labels: not the wildcard's
    expect(hostNeedsNode(t, "unknown.test")).toBe(false);
    expect(hostNeedsNode(makeTable([web("web.test"), grpc(null)]), "unknown.test")).toBe(true);
    expect(everyHostNeedsNode(t)).toBe(false);
  });

  test("a gRPC default route: every host", () => {
    const t = makeTable([web("web.test")], grpc(null));
    expect(everyHostNeedsNode(t)).toBe(true);
    expect(hostNeedsNode(t, "web.test")).toBe(true);
  });
});

describe("hostsMovedToNode", () => {
  const base = [web("web.test"), grpc("rpc.test")];
  test("a host gaining a gRPC route moves; one losing it, a new ordinary host, or a new table of the same hosts do not", () => {
    const t = makeTable(base);
    expect(hostsMovedToNode(t, makeTable([...base, grpc("web.test", "/svc.Echo")]))).toBe(true);
    expect(hostsMovedToNode(t, makeTable([...base, grpc("new.test")]))).toBe(true);
    expect(hostsMovedToNode(t, makeTable([web("web.test"), web("rpc.test")]))).toBe(false);
    expect(hostsMovedToNode(t, makeTable([...base, web("other.test")]))).toBe(false);
    expect(hostsMovedToNode(t, makeTable(base))).toBe(false);
  });

  test("an ordinary host removed falls to a gRPC wildcard or hostless entry: moved", () => {
    const t = makeTable([...base, grpc("*.wild.test"), web("a.wild.test"), web("b.other.test"), web("*.other.test")]);
    expect(hostsMovedToNode(t, makeTable([...base, grpc("*.wild.test"), web("b.other.test"), web("*.other.test")]))).toBe(true);
    // b.other.test falls to an ordinary wildcard: not moved.
    expect(hostsMovedToNode(t, makeTable([...base, grpc("*.wild.test"), web("a.wild.test"), web("*.other.test")]))).toBe(false);
    const hostless = makeTable([...base, web("*.other.test"), grpc(null)]);
    expect(hostsMovedToNode(hostless, makeTable([...base, grpc(null)]))).toBe(true);
  });
});
