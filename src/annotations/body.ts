// Request body limit for the routes of one Ingress (the proxy reads RouteOptions.maxBodySize).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import * as v from "valibot";
import { Size } from "./values.ts";

export interface BodyPolicy {
  /** Bytes; Infinity = unlimited even when --max-body-size is set; null = the flag. */
  readonly maxBodySize: number | null;
}

export const MAX_BODY_SIZE: AnnotationSpec = {
  portico: "portico.dev/max-body-size",
  nginx: [`${NGINX_PREFIX}proxy-body-size`],
  family: "body",
  default: "--max-body-size",
  description: "bytes or `512k`, `10m`, `1g`; `0` = unlimited; a larger body gets 413",
  compat: {
    kind: "differs",
    difference:
      "The default comes from `--max-body-size`, unlimited unless set (ingress-nginx: ConfigMap `proxy-body-size`, default 1m). A value set on the Ingress (bytes, `k`, `m`, `g`, no spaces) is served the same: nginx's size syntax, `0` unlimited, 413 above it.",
  },
  sameWhen: (value) => /^\d+[kmg]?$/i.test(value) && v.is(Size, value),
};

const NONE: BodyPolicy = Object.freeze({ maxBodySize: null });

export const BODY: Family<BodyPolicy> = {
  name: "body",
  annotations: [MAX_BODY_SIZE],
  none: NONE,
  parse(r) {
    const maxBodySize = r.value(MAX_BODY_SIZE, Size);
    return maxBodySize === undefined ? NONE : Object.freeze({ maxBodySize });
  },
};
