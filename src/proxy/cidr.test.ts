import { expect, test } from "bun:test";
import { parseIp, trustMatcher } from "./cidr.ts";

test("parses v4, v6, mapped", () => {
  expect([...parseIp("10.1.2.3")!]).toEqual([10, 1, 2, 3]);
  expect([...parseIp("::ffff:10.1.2.3")!]).toEqual([10, 1, 2, 3]);
  expect(parseIp("::1")!.length).toBe(16);
  expect(parseIp("1.2.3")).toBeNull();
  expect(parseIp("1::2::3")).toBeNull();
});

test("matches CIDRs", () => {
  const t = trustMatcher(["10.0.0.0/8", "fd00::/8", "192.168.1.7", "bogus"]);
  expect(t("10.200.3.4")).toBe(true);
  expect(t("::ffff:10.9.9.9")).toBe(true);
  expect(t("11.0.0.1")).toBe(false);
  expect(t("fd12::5")).toBe(true);
  expect(t("fe80::1")).toBe(false);
  expect(t("192.168.1.7")).toBe(true);
  expect(t("192.168.1.8")).toBe(false);
  expect(trustMatcher([])("10.0.0.1")).toBe(false);
  expect(trustMatcher(["0.0.0.0/0"])("8.8.8.8")).toBe(true);
});
