// proxy-request-buffering, client-body-buffer-size and proxy-buffering as the compiler reads
// them (ingress-nginx's annotations/proxy and annotations/clientbodybuffersize parsers).
import { expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";
import { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";

const N = "nginx.ingress.kubernetes.io/";
const size = (ann: Record<string, string>) => parseAnnotations(ann).options.requestBufferSize;

test("values: on keeps the flag's size, off streams, a size sets the bound (0 is zero, not unlimited)", () => {
  expect(size({ [`${N}proxy-request-buffering`]: "on" })).toBeNull();
  expect(size({ [`${N}proxy-request-buffering`]: "OFF" })).toBe(0);
  expect(size({ [`${N}client-body-buffer-size`]: "16k" })).toBe(16 * 1024);
  expect(size({ [`${N}client-body-buffer-size`]: "2m" })).toBe(2 * 1024 * 1024);
  expect(size({ [`${N}client-body-buffer-size`]: "0" })).toBe(0);
  expect(size({ "portico.dev/request-buffer-size": "8192", [`${N}client-body-buffer-size`]: "1m" })).toBe(8192);
  // off wins over a size.
  expect(size({ [`${N}proxy-request-buffering`]: "off", [`${N}client-body-buffer-size`]: "1m" })).toBe(0);
});

test("bad values fall back to the default with a diagnostic", () => {
  for (const [k, v] of [["proxy-request-buffering", "maybe"], ["client-body-buffer-size", "10x"], ["client-body-buffer-size", ""], ["proxy-buffering", "yes"], ["proxy-request-buffering", "on\noff"], ["proxy-buffer-size", "0"], ["proxy-buffer-size", "4q"], ["proxy-buffers-number", "0"], ["proxy-buffers-number", "four"]] as const) {
    const p = parseAnnotations({ [`${N}${k}`]: v });
    expect(p.problems).toHaveLength(1);
    expect(p.options).toBe(DEFAULT_ROUTE_OPTIONS);
  }
});

test("proxy-buffering and proxy-buffer-size set the route's response buffering; proxy-buffers-number is read and changes no option", () => {
  const on = parseAnnotations({ [`${N}proxy-buffering`]: "ON", [`${N}proxy-buffer-size`]: "8k" });
  expect(on.problems).toEqual([]);
  expect(on.unsupported).toEqual([]);
  expect(on.options).toMatchObject({ proxyBuffering: true, proxyBufferSize: 8192, requestBufferSize: null });
  expect(parseAnnotations({ [`${N}proxy-buffering`]: "off" }).options).toMatchObject({ proxyBuffering: false, proxyBufferSize: null });
  const n = parseAnnotations({ [`${N}proxy-buffers-number`]: "8" });
  expect(n.problems).toEqual([]);
  expect(n.unsupported).toEqual([]);
  expect(n.options).toBe(DEFAULT_ROUTE_OPTIONS);
});

// client_body_buffer_size and proxy_buffer_size are ngx_conf_set_size_slot: ngx_parse_size
// (src/core/ngx_parse.c) takes k/K and m/M, no g (only ngx_parse_offset, for client_max_body_size,
// takes g). ingress-nginx's SizeRegex `^(?i)\d+[bkmg]?$` lets `1g` and `8b` through, and nginx
// then refuses the configuration (ingress-nginx keeps the last good one): refused here too.
test("sizes as nginx's ngx_parse_size reads them: k and m in either case, no g or b", () => {
  for (const k of ["client-body-buffer-size", "proxy-buffer-size"]) {
    for (const bad of ["1g", "1G", "8b", "1.5k", "16kb"]) {
      const p = parseAnnotations({ [`${N}${k}`]: bad });
      expect(p.problems).toHaveLength(1);
      expect(p.options).toBe(DEFAULT_ROUTE_OPTIONS);
    }
  }
  expect(parseAnnotations({ [`${N}proxy-buffer-size`]: "16K" }).options.proxyBufferSize).toBe(16 * 1024);
  expect(parseAnnotations({ [`${N}proxy-buffer-size`]: "1M" }).options.proxyBufferSize).toBe(1024 * 1024);
  expect(size({ [`${N}client-body-buffer-size`]: "2M" })).toBe(2 * 1024 * 1024);
  // client_max_body_size is an offset (ngx_parse_offset): g is nginx's there.
  expect(parseAnnotations({ [`${N}proxy-body-size`]: "1g" }).options.maxBodySize).toBe(1024 ** 3);
});
