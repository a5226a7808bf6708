// ingress-nginx's large-client-header-buffers (`<number> <size>`, default `4 8k`,
// internal/ingress/controller/config/config.go; nginx's large_client_header_buffers): a request
// line or a header line must fit one buffer of `size`, the whole head at most `number` of them.
// Portico enforces it itself (proxy/pipeline/admit.ts) under a parser limit Bun is started with
// (BUN_MAX_HEADER_SIZE), which is fixed for the process: docs/design.md "Request framing and
// bodies", request heads.
import { maxHeaderSize } from "node:http";

/**
 * The `--max-http-header-size` every Portico process runs with (scripts/build.ts compiles it
 * into the executable's execArgv; package.json and the README pass it to `bun src/main.ts`).
 * Bun 1.4.5 counts the whole head against it, request line and final CRLF included, and
 * answers 431 above it (measured: 65,536 bytes pass, 65,537 get 431). 64 KiB holds `4 16k`,
 * the largest value ingress-nginx users commonly set for big SSO cookies.
 */
export const BUN_MAX_HEADER_SIZE = 65536;
/** The bun option that sets it (scripts/build.ts, package.json, the README's commands). */
export const BUN_HEADER_FLAG = `--max-http-header-size=${BUN_MAX_HEADER_SIZE}`;

/**
 * The parser limit this process runs with: node:http's maxHeaderSize, which Bun sets from
 * --max-http-header-size (16 KiB without it; measured on 1.4.5, and it is what Bun.serve enforces).
 */
export function processHeaderLimit(): number {
  return typeof maxHeaderSize === "number" && maxHeaderSize > 0 ? maxHeaderSize : 16384;
}

export interface HeaderBuffers {
  /** How many buffers: the head may take number × size bytes. */
  readonly number: number;
  /** One buffer: the longest request line or header line, CRLF included. */
  readonly size: number;
}

export const DEFAULT_HEADER_BUFFERS: HeaderBuffers = Object.freeze({ number: 4, size: 8192 });

/**
 * nginx's ngx_parse_size: digits with an optional k/K or m/M (no g, no fraction, no spaces).
 * The smallest size nginx starts with is its connection_pool_size (512 on 64-bit builds,
 * ngx_http_core_merge_srv_conf refuses a smaller one).
 */
const SIZE = /^(\d{1,9})([kKmM]?)$/;
/** The smallest size accepted; proxy/pipeline/validate.ts relies on no limit being below it. */
export const MIN_HEADER_BUFFER_SIZE = 512;

/**
 * `<number> <size>` as ngx_conf_set_bufs_slot reads it (number a positive integer, size in
 * nginx's syntax); null for text nginx would refuse. Not clamped: see clampHeaderBuffers.
 */
export function parseHeaderBuffers(text: string): HeaderBuffers | null {
  const parts = text.trim().split(/[ \t]+/);
  if (parts.length !== 2) return null;
  const [n, s] = parts as [string, string];
  if (!/^\d{1,9}$/.test(n)) return null;
  const number = Number(n);
  const m = SIZE.exec(s);
  if (m === null || number < 1) return null;
  const unit = m[2] === "" ? 1 : /k/i.test(m[2]!) ? 1024 : 1024 * 1024;
  const size = Number(m[1]) * unit;
  return size >= MIN_HEADER_BUFFER_SIZE && Number.isSafeInteger(size) ? { number, size } : null;
}

/** True when the head `b` allows fits Bun's parser limit. */
export function fitsBun(b: HeaderBuffers): boolean {
  return b.size <= BUN_MAX_HEADER_SIZE && b.number * b.size <= BUN_MAX_HEADER_SIZE;
}

/**
 * `b` bounded by BUN_MAX_HEADER_SIZE: a line keeps its size up to the limit, and the number
 * drops until the whole head fits (`4 32k` becomes `2 32k`: lines of 32 KiB, 64 KiB in all).
 */
export function clampHeaderBuffers(b: HeaderBuffers): HeaderBuffers {
  if (fitsBun(b)) return b;
  const size = Math.min(b.size, BUN_MAX_HEADER_SIZE);
  return { number: Math.max(1, Math.min(b.number, Math.floor(BUN_MAX_HEADER_SIZE / size))), size };
}

/** The text nginx would read for `b` (`4 8k`). */
export function formatHeaderBuffers(b: HeaderBuffers): string {
  return b.size % 1024 === 0 ? `${b.number} ${b.size / 1024}k` : `${b.number} ${b.size}`;
}
