import { expect, test } from "bun:test";
import type { Backend, Upstream } from "../table/types.ts";
import { createBalancer } from "./balancer.ts";

function ep(port: number): Upstream {
  return { address: "10.0.0.1", port, authority: `10.0.0.1:${port}`, ready: true, serving: true, terminating: false };
}
function backend(eps: Upstream[]): Backend {
  return {
    id: "ns/svc:80", namespace: "ns", service: "svc", port: "80", status: "ok", endpoints: eps,
    allEndpoints: eps, scheme: "http", serverName: "svc.ns.svc", externalName: false,
  };
}

test("round robin visits every endpoint evenly", () => {
  const b = backend([ep(1), ep(2), ep(3)]);
  const bal = createBalancer();
  const seen = new Map<number, number>();
  for (let i = 0; i < 30; i++) {
    const u = bal.pick(b)!;
    seen.set(u.port, (seen.get(u.port) ?? 0) + 1);
  }
  expect([...seen.values()]).toEqual([10, 10, 10]);
});

test("failed endpoint is skipped during back-off and used again after", () => {
  let t = 0;
  const b = backend([ep(1), ep(2)]);
  const bal = createBalancer(() => t);
  bal.failed(ep(1));
  for (let i = 0; i < 6; i++) expect(bal.pick(b)!.port).toBe(2);
  t = 2_001;
  const ports = new Set([bal.pick(b)!.port, bal.pick(b)!.port]);
  expect(ports).toEqual(new Set([1, 2]));
  // growing back-off
  bal.failed(ep(1));
  bal.failed(ep(1));
  t += 7_000;
  expect(bal.isBackedOff("10.0.0.1:1")).toBe(true);
  bal.succeeded(ep(1));
  expect(bal.isBackedOff("10.0.0.1:1")).toBe(false);
});

test("exclude and all-backed-off fallback", () => {
  const b = backend([ep(1), ep(2)]);
  const bal = createBalancer(() => 0);
  expect(bal.pick(b, new Set(["10.0.0.1:1"]))!.port).toBe(2);
  bal.failed(ep(1));
  bal.failed(ep(2));
  expect(bal.pick(b)).not.toBeNull();
  expect(bal.pick(backend([]))).toBeNull();
});
