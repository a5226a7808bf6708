// The holder's contract, as the proxy relies on it: a request reads `current` once and routes
// on that table for its whole life, whatever is swapped in meanwhile; a request that starts
// after a swap routes on the new table; each swap numbers a new generation.
import { expect, test } from "bun:test";
import { buildTable } from "../../src/table/build.ts";
import { TableHolder } from "../../src/table/holder.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { mkRoute } from "../compile/routes.ts";

/** The Ingress a request for host+path is routed to on `table`, or "404". */
const routedTo = (table: RouteTable, host: string, path: string): string => lookup(table, host, path)?.route.ingress.name ?? "404";

test("before the first table is installed: generation 0, every request 404", () => {
  const holder = new TableHolder();
  expect(holder.generation).toBe(0);
  expect(routedTo(holder.current, "a.test", "/")).toBe("404");
  expect(routedTo(holder.current, "", "/x")).toBe("404");
});

test("a request started on the old table keeps it; one started after the swap sees the new table", () => {
  const holder = new TableHolder();
  expect(holder.swap(buildTable([mkRoute("a.test", "/", "Prefix", "v1")], null))).toBe(1);
  const inFlight = holder.current; // a request reads the table once, when it starts
  expect(routedTo(inFlight, "a.test", "/x")).toBe("v1");

  const v2 = buildTable([mkRoute("a.test", "/", "Prefix", "v2"), mkRoute("b.test", "/", "Prefix", "v2")], null);
  expect(holder.swap(v2)).toBe(2);
  expect(holder.generation).toBe(2);

  // The request in flight still routes as it did when it started...
  expect(routedTo(inFlight, "a.test", "/x")).toBe("v1");
  expect(routedTo(inFlight, "b.test", "/")).toBe("404");
  // ...and a new request routes on the new table.
  expect(routedTo(holder.current, "a.test", "/x")).toBe("v2");
  expect(routedTo(holder.current, "b.test", "/")).toBe("v2");

  // Removing every route is a swap like any other: new requests 404, the generation still counts.
  expect(holder.swap(buildTable([], null))).toBe(3);
  expect(routedTo(holder.current, "a.test", "/x")).toBe("404");
  expect(routedTo(inFlight, "a.test", "/x")).toBe("v1");
});

test("a holder built on a table serves it at generation 0 until the first swap", () => {
  const holder = new TableHolder(buildTable([mkRoute(null, "/", "Prefix", "initial")], null));
  expect(holder.generation).toBe(0);
  expect(routedTo(holder.current, "any.test", "/y")).toBe("initial");
});
